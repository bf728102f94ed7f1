"""in.php fields: one validator and one byte bound per field, shared by every kind."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pingback_guard.domain.task import is_clean_text

Check = Callable[[str], bool]

MAX_URL_BYTES = 2048
MAX_TEXT_BYTES = 4096
# 2captcha-protocol image bound (in.php ERROR_TOO_BIG_CAPTCHA_FILESIZE over 100 kB, and
# ERROR_ZERO_CAPTCHA_FILESIZE under 100 bytes), as decoded bytes; base64 carries 4 chars per 3.
MIN_IMAGE_BYTES = 100
MAX_IMAGE_BYTES = 100 * 1024
MAX_IMAGE_BASE64_BYTES = 4 * ((MAX_IMAGE_BYTES + 2) // 3)
# A data URI prefix such as "data:image/gif;base64," (BLS sends its cells this way).
DATA_URI_PREFIX = re.compile(r"data:image/[a-z0-9.+-]{1,20};base64,")
SITEKEY = re.compile(r"[A-Za-z0-9_.-]{1,128}")
HOSTNAME = re.compile(r"[A-Za-z0-9.-]{1,253}")
DECIMAL = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3})?")


@dataclass(frozen=True)
class Field:
    """One in.php field: what it must look like (``expects``, shown in a refusal), its byte bound,
    whether a kind needs it, and whether it is a secret (sent to the provider, never kept)."""

    name: str
    check: Check
    expects: str
    max_bytes: int
    required: bool = False
    secret: bool = False

    def problem(self, value: str) -> str | None:
        """Why ``value`` does not fit this field, naming it; None when it fits."""
        if len(value.encode("utf-8", "surrogatepass")) > self.max_bytes:
            return f"{self.name} must be at most {self.max_bytes} bytes"
        if not is_clean_text(value) or not self.check(value):
            return f"{self.name} must be {self.expects}"
        return None

    def optional(self) -> Field:
        return Field(self.name, self.check, self.expects, self.max_bytes, False, self.secret)

    def needed(self) -> Field:
        return Field(self.name, self.check, self.expects, self.max_bytes, True, self.secret)


def one_of(*allowed: str) -> Check:
    return frozenset(allowed).__contains__


def whole_number(low: int, high: int) -> Check:
    def check(value: str) -> bool:
        return value.isascii() and value.isdigit() and low <= int(value) <= high

    return check


def matches(pattern: re.Pattern[str]) -> Check:
    return lambda value: pattern.fullmatch(value) is not None


def any_text(value: str) -> bool:
    return bool(value) and value.isprintable()


def http_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in {"http", "https"} and bool(parts.netloc) and value.isprintable()


def score(value: str) -> bool:
    return DECIMAL.fullmatch(value) is not None and 0.1 <= float(value) <= 0.9


def decode_image(value: str) -> bytes:
    """The image bytes of clean base64 or a data URI; ValueError when it is neither."""
    prefix = DATA_URI_PREFIX.match(value)
    payload = value[prefix.end() :] if prefix else value
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error:
        raise ValueError("not base64") from None


def image_base64(value: str) -> bool:
    """Clean base64 (or a data URI) of an image between MIN_IMAGE_BYTES and MAX_IMAGE_BYTES."""
    try:
        decoded = decode_image(value)
    except ValueError:
        return False
    return MIN_IMAGE_BYTES <= len(decoded) <= MAX_IMAGE_BYTES


def text(name: str, max_bytes: int = MAX_TEXT_BYTES, *, secret: bool = False) -> Field:
    return Field(name, any_text, "printable text", max_bytes, secret=secret)


def flag(name: str) -> Field:
    return Field(name, one_of("0", "1"), "0 or 1", 1)


def number(name: str, low: int, high: int) -> Field:
    return Field(name, whole_number(low, high), f"a whole number from {low} to {high}", 8)


PAGEURL = Field("pageurl", http_url, "an http(s) URL", MAX_URL_BYTES, required=True)
SOFT_ID = number("soft_id", 0, 10**12)
USER_AGENT = text("userAgent", 1024)
COOKIES = text("cookies", MAX_TEXT_BYTES, secret=True)
PROXY = text("proxy", 1024, secret=True)
PROXYTYPE = Field(
    "proxytype", one_of("HTTP", "HTTPS", "SOCKS4", "SOCKS5"), "HTTP, HTTPS, SOCKS4 or SOCKS5", 6
)


def sitekey(name: str) -> Field:
    return Field(name, matches(SITEKEY), "1-128 characters [A-Za-z0-9_.-]", 128, required=True)


def image(name: str) -> Field:
    return Field(
        name,
        image_base64,
        f"a base64 image of {MIN_IMAGE_BYTES} bytes to {MAX_IMAGE_BYTES // 1024} KB",
        MAX_IMAGE_BASE64_BYTES + 64,
        required=True,
        secret=True,
    )


# Where a browser kind's worker solves from: its user agent and proxy (both passed to the solver).
BROWSER = (USER_AGENT, PROXY, PROXYTYPE, SOFT_ID)

# The other spellings published clients put on the wire for a field: 2captcha-python 2.1.2 sends
# ``useragent`` (its README's Turnstile example, and its vkcaptcha/captchafox methods) and
# @2captcha/captcha-solver 1.3.9 sends ``datas`` for reCAPTCHA's data-s and renames ``userAgent``
# to ``useragent`` for some kinds. Read as the field they stand for and sent to the provider under
# the name its in.php documents.
SPELLINGS = {"useragent": "userAgent", "datas": "data-s"}
