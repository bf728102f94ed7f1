"""One call per CAPTCHA kind, named as the 2captcha SDK names them; each submits through the
stack and waits for the Solution (raw answer and parsed form). Extra keyword arguments are the
provider's in.php fields or the SDK's names for them (``minLen``, ``score``, a proxy dict ...).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pingback_guard_client.models import Solution

DEFAULT_TIMEOUT = 180.0
BLS_CELLS = 9

Image = bytes | str | os.PathLike[str]
"""Image bytes, a path to an image file, or the image already base64-encoded."""


class _SubmitsDocuments(Protocol):
    def submit_document(self, document: Mapping[str, Any]) -> tuple[str, float | None]: ...

    def wait(
        self, task_id: str, timeout: float = ..., first_look_after: float | None = ...
    ) -> Solution: ...


class KindCalls:
    """Mixed into Client: the per-kind calls on top of submit_document() and wait()."""

    def normal(
        self: _SubmitsDocuments, file: Image, timeout: float = DEFAULT_TIMEOUT, **options: Any
    ) -> Solution:
        """An image CAPTCHA (OCR). Options: numeric, minLen/min_len, maxLen/max_len, phrase,
        regsense/caseSensitive, calc, language, lang, textinstructions/hintText."""
        return _solve(self, {"method": "base64", "body": image_base64(file), **options}, timeout)

    def grid(
        self: _SubmitsDocuments,
        file: Image,
        rows: int | None = None,
        cols: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        """A grid to click (answer ``click:1/4/6``, parsed as cells)."""
        shape = {name: value for name, value in (("rows", rows), ("cols", cols)) if value}
        document = {"method": "base64", "body": image_base64(file), "recaptcha": 1, **shape}
        return _solve(self, {**document, **options}, timeout)

    def coordinates(
        self: _SubmitsDocuments, file: Image, timeout: float = DEFAULT_TIMEOUT, **options: Any
    ) -> Solution:
        """Points to click on an image (answer ``coordinates:x=..,y=..;...``, parsed as points)."""
        document = {"method": "base64", "body": image_base64(file), "coordinatescaptcha": 1}
        return _solve(self, {**document, **options}, timeout)

    def recaptcha(
        self: _SubmitsDocuments,
        sitekey: str,
        url: str,
        version: str = "v2",
        enterprise: int = 0,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        """reCAPTCHA v2, v3 (``score``/min_score, action), Enterprise, invisible."""
        document: dict[str, Any] = {
            "method": "userrecaptcha",
            "sitekey": sitekey,
            "url": url,
            "version": version,
        }
        if enterprise:
            document["enterprise"] = 1
        return _solve(self, {**document, **options}, timeout)

    def hcaptcha(
        self: _SubmitsDocuments,
        sitekey: str,
        url: str,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        return _solve(
            self, {"method": "hcaptcha", "sitekey": sitekey, "url": url, **options}, timeout
        )

    def turnstile(
        self: _SubmitsDocuments,
        sitekey: str,
        url: str,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        return _solve(
            self, {"method": "turnstile", "sitekey": sitekey, "url": url, **options}, timeout
        )

    def geetest(
        self: _SubmitsDocuments,
        gt: str,
        challenge: str,
        url: str,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        """GeeTest v3 (``apiServer``/api_server optional); the answer's fields are parsed."""
        document = {"method": "geetest", "gt": gt, "challenge": challenge, "url": url}
        return _solve(self, {**document, **options}, timeout)

    def geetest_v4(
        self: _SubmitsDocuments,
        captcha_id: str,
        url: str,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        document = {"method": "geetest", "version": 4, "captcha_id": captcha_id, "url": url}
        return _solve(self, {**document, **options}, timeout)

    def cloudflare_challenge(
        self: _SubmitsDocuments,
        url: str,
        user_agent: str,
        proxy: Mapping[str, str],
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        """Cloudflare's challenge page: use the cf_clearance with this user agent and proxy.
        ``proxy`` is the SDK's dict: {"type": "HTTP", "uri": "login:password@host:port"}."""
        document = {
            "method": "cloudflare_challenge",
            "url": url,
            "userAgent": user_agent,
            "proxy": dict(proxy),
        }
        return _solve(self, {**document, **options}, timeout)

    def bls(
        self: _SubmitsDocuments,
        instructions: str,
        images: Sequence[Image],
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> Solution:
        """A BLS grid: up to nine cell images and the numeric instruction; answers the cells."""
        if not 1 <= len(images) <= BLS_CELLS:
            raise ValueError(f"bls takes 1 to {BLS_CELLS} images")
        cells = {f"image_base64_{n}": image_base64(image) for n, image in enumerate(images, 1)}
        document = {"method": "bls", "instructions": instructions, **cells}
        return _solve(self, {**document, **options}, timeout)


def _solve(client: _SubmitsDocuments, document: Mapping[str, Any], timeout: float) -> Solution:
    task_id, first_look_after = client.submit_document(document)
    return client.wait(task_id, timeout, first_look_after)


def image_base64(image: Image) -> str:
    if isinstance(image, bytes):
        return base64.b64encode(image).decode()
    if isinstance(image, str) and not os.path.isfile(image):
        return image
    with open(image, "rb") as opened:
        return base64.b64encode(opened.read()).decode()
