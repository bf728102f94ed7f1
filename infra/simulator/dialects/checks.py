"""Submit checks both dialects make the same way: images, proxies, page URLs, site keys."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from infra.simulator import codes
from infra.simulator.answers import image_bytes

PROXY_TYPES: Final = frozenset({"HTTP", "HTTPS", "SOCKS4", "SOCKS5"})
PROXY_PATTERN: Final = re.compile(r"(?:[^:@\s]+:[^@\s]+@)?[^:@\s]+:\d{1,5}")
# in.php's image bounds: ERROR_ZERO_CAPTCHA_FILESIZE under 100 bytes, ERROR_TOO_BIG over 100 kB
# (https://docs.captchaai.com/api/api-error-handling, as 2captcha's API v1 documents them).
MIN_IMAGE_BYTES: Final = 100
MAX_IMAGE_BYTES: Final = 100 * 1024


def image_error(params: Mapping[str, str]) -> str | None:
    image = image_bytes(params)
    if image is None or len(image) < MIN_IMAGE_BYTES:
        return codes.ERROR_ZERO_CAPTCHA_FILESIZE
    return codes.ERROR_TOO_BIG_CAPTCHA_FILESIZE if len(image) > MAX_IMAGE_BYTES else None


def sitekey_error(params: Mapping[str, str]) -> str | None:
    return None if params.get("googlekey") or params.get("sitekey") else codes.ERROR_GOOGLEKEY


def pageurl_error(params: Mapping[str, str]) -> str | None:
    return None if params.get("pageurl") else codes.ERROR_PAGEURL


def proxy_error(params: Mapping[str, str]) -> str | None:
    """A proxy, when given, is ``[user:pass@]host:port`` with a known ``proxytype``."""
    if "proxy" not in params:
        return None
    proxy_type = params.get("proxytype", "HTTP").upper()
    valid = proxy_type in PROXY_TYPES and PROXY_PATTERN.fullmatch(params["proxy"]) is not None
    return None if valid else codes.ERROR_BAD_PROXY


def first_error(*errors: str | None) -> str | None:
    return next((error for error in errors if error is not None), None)
