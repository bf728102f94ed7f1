"""One call per CAPTCHA kind, named as the 2captcha SDK names them, for Client and AsyncClient
alike: each builds its kind's request document here, then the client solves it (submit, wait
for the Solution: raw answer and parsed form). Extra keyword arguments are the provider's in.php
fields or the SDK's names for them (``minLen``, ``score``, a proxy dict ...).
"""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

from pingback_guard_client.models import Solution

DEFAULT_TIMEOUT = 180.0
BLS_CELLS = 9

Image = bytes | str | os.PathLike[str]
"""Image bytes, a path to an image file, or the image already base64-encoded."""


@dataclass(frozen=True)
class KindRequest:
    """One kind's request document (POST /tasks) and how long to wait for its solution."""

    document: dict[str, Any]
    timeout: float


class _Solves(Protocol):
    def solve_document(self, document: Mapping[str, Any], timeout: float = ...) -> Solution: ...


class _SolvesAsync(Protocol):
    def solve_document(
        self, document: Mapping[str, Any], timeout: float = ...
    ) -> Coroutine[Any, Any, Solution]: ...


class KindCall[**P]:
    """A per-kind call: on a Client it returns the Solution, on an AsyncClient a coroutine of
    it; either way the document comes from the one builder given here (what the class shows)."""

    def __init__(self, build: Callable[P, KindRequest]) -> None:
        self.build = build

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Callable[P, KindRequest]: ...

    @overload
    def __get__(
        self, client: _SolvesAsync, owner: type[Any]
    ) -> Callable[P, Coroutine[Any, Any, Solution]]: ...

    @overload
    def __get__(self, client: _Solves, owner: type[Any]) -> Callable[P, Solution]: ...

    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:  # on the class: the builder itself (help(), signature)
            return self.build
        build = self.build

        @functools.wraps(build)
        def call(*args: P.args, **kwargs: P.kwargs) -> Any:
            request = build(*args, **kwargs)
            return client.solve_document(request.document, request.timeout)

        return call


def normal(file: Image, timeout: float = DEFAULT_TIMEOUT, **options: Any) -> KindRequest:
    """An image CAPTCHA (OCR). Options: numeric, minLen/min_len, maxLen/max_len, phrase,
    regsense/caseSensitive, calc, language, lang, textinstructions/hintText."""
    return KindRequest({"method": "base64", "body": image_base64(file), **options}, timeout)


def grid(
    file: Image,
    rows: int | None = None,
    cols: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> KindRequest:
    """A grid to click (answer ``click:1/4/6``, parsed as cells)."""
    shape = {name: value for name, value in (("rows", rows), ("cols", cols)) if value}
    document = {"method": "base64", "body": image_base64(file), "recaptcha": 1, **shape}
    return KindRequest({**document, **options}, timeout)


def coordinates(file: Image, timeout: float = DEFAULT_TIMEOUT, **options: Any) -> KindRequest:
    """Points to click on an image (answer ``coordinates:x=..,y=..;...``, parsed as points)."""
    document = {"method": "base64", "body": image_base64(file), "coordinatescaptcha": 1}
    return KindRequest({**document, **options}, timeout)


def recaptcha(
    sitekey: str,
    url: str,
    version: str = "v2",
    enterprise: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> KindRequest:
    """reCAPTCHA v2, v3 (``score``/min_score, action), Enterprise, invisible."""
    document: dict[str, Any] = {
        "method": "userrecaptcha",
        "sitekey": sitekey,
        "url": url,
        "version": version,
    }
    if enterprise:
        document["enterprise"] = 1
    return KindRequest({**document, **options}, timeout)


def hcaptcha(
    sitekey: str, url: str, timeout: float = DEFAULT_TIMEOUT, **options: Any
) -> KindRequest:
    return KindRequest({"method": "hcaptcha", "sitekey": sitekey, "url": url, **options}, timeout)


def turnstile(
    sitekey: str, url: str, timeout: float = DEFAULT_TIMEOUT, **options: Any
) -> KindRequest:
    return KindRequest({"method": "turnstile", "sitekey": sitekey, "url": url, **options}, timeout)


def geetest(
    gt: str, challenge: str, url: str, timeout: float = DEFAULT_TIMEOUT, **options: Any
) -> KindRequest:
    """GeeTest v3 (``apiServer``/api_server optional); the answer's fields are parsed."""
    document = {"method": "geetest", "gt": gt, "challenge": challenge, "url": url}
    return KindRequest({**document, **options}, timeout)


def geetest_v4(
    captcha_id: str, url: str, timeout: float = DEFAULT_TIMEOUT, **options: Any
) -> KindRequest:
    document = {"method": "geetest", "version": 4, "captcha_id": captcha_id, "url": url}
    return KindRequest({**document, **options}, timeout)


def cloudflare_challenge(
    url: str,
    user_agent: str | None,
    proxy: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> KindRequest:
    """Cloudflare's challenge page: use the cf_clearance with the proxy and the user agent the
    task answers with (the solver's, when the provider sends it; else this one, which CaptchaAI
    does not need). ``proxy``: {"type": "HTTP", "uri": "login:password@host:port"}."""
    document: dict[str, Any] = {"method": "cloudflare_challenge", "url": url, "proxy": dict(proxy)}
    if user_agent is not None:
        document["userAgent"] = user_agent
    return KindRequest({**document, **options}, timeout)


def captchafox(
    sitekey: str,
    url: str,
    proxy: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> KindRequest:
    """CaptchaFox (a proxy is required): use the token with the task's ``user_agent``."""
    document = {"method": "captchafox", "sitekey": sitekey, "url": url, "proxy": dict(proxy)}
    return KindRequest({**document, **options}, timeout)


def friendly_captcha(
    sitekey: str,
    url: str,
    version: str = "v1",
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> KindRequest:
    """Friendly Captcha, ``version`` v1 or v2."""
    document = {"method": "friendly_captcha", "sitekey": sitekey, "url": url, "version": version}
    return KindRequest({**document, **options}, timeout)


def lemin(
    captcha_id: str, div_id: str, url: str, timeout: float = DEFAULT_TIMEOUT, **options: Any
) -> KindRequest:
    """Lemin (``apiServer`` optional); the answer's ``answer`` and ``challenge_uuid`` are parsed."""
    document = {"method": "lemin", "captcha_id": captcha_id, "div_id": div_id, "url": url}
    return KindRequest({**document, **options}, timeout)


def bls(
    instructions: str,
    images: Sequence[Image],
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> KindRequest:
    """A BLS grid: up to nine cell images and the instructions; answers the cells."""
    if not 1 <= len(images) <= BLS_CELLS:
        raise ValueError(f"bls takes 1 to {BLS_CELLS} images")
    cells = {f"image_base64_{n}": image_base64(image) for n, image in enumerate(images, 1)}
    document = {"method": "bls", "instructions": instructions, **cells}
    return KindRequest({**document, **options}, timeout)


class KindCalls:
    """Mixed into Client and AsyncClient, which each give solve_document()."""

    normal = KindCall(normal)
    grid = KindCall(grid)
    coordinates = KindCall(coordinates)
    recaptcha = KindCall(recaptcha)
    hcaptcha = KindCall(hcaptcha)
    turnstile = KindCall(turnstile)
    geetest = KindCall(geetest)
    geetest_v4 = KindCall(geetest_v4)
    cloudflare_challenge = KindCall(cloudflare_challenge)
    bls = KindCall(bls)
    captchafox = KindCall(captchafox)
    friendly_captcha = KindCall(friendly_captcha)
    lemin = KindCall(lemin)


def image_base64(image: Image) -> str:
    if isinstance(image, bytes):
        return base64.b64encode(image).decode()
    if isinstance(image, str) and not os.path.isfile(image):
        return image
    with open(image, "rb") as opened:
        return base64.b64encode(opened.read()).decode()
