"""Per-task pingback capabilities: ``v1.<nonce>.<mac>``, checked without reading the table.

nonce: 16 random bytes, base64url. mac: HMAC-SHA256 of the nonce under the stack's callback
secret, truncated to 16 bytes, base64url. Holding one task's URL proves only that task's nonce;
the table decides which task the nonce belongs to.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

VERSION = "v1"
NONCE_BYTES = 16
MAC_BYTES = 16
_B64_16_BYTES = r"[A-Za-z0-9_-]{21}[AQgw]"  # 16 bytes base64url without padding: 22 characters
NONCE_PATTERN = re.compile(_B64_16_BYTES)
CAPABILITY_PATTERN = re.compile(rf"v1\.({_B64_16_BYTES})\.({_B64_16_BYTES})")
CAPABILITY_LENGTH = len(VERSION) + 2 + 22 + 22


@dataclass(frozen=True)
class Capability:
    nonce: str
    token: str


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _mac(secret: str, nonce: str) -> str:
    digest = hmac.new(secret.encode("utf-8"), nonce.encode("ascii"), hashlib.sha256).digest()
    return _b64(digest[:MAC_BYTES])


def mint(secret: str, random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> Capability:
    nonce = _b64(random_bytes(NONCE_BYTES))
    return Capability(nonce, f"{VERSION}.{nonce}.{_mac(secret, nonce)}")


def proven_nonce(presented: str, accepted_secrets: Iterable[str]) -> str | None:
    """The nonce a well-formed capability proves under any accepted secret, else None.

    Every accepted secret is compared, in constant time, whatever the earlier ones gave.
    """
    if len(presented) != CAPABILITY_LENGTH:
        return None
    match = CAPABILITY_PATTERN.fullmatch(presented)
    if match is None:
        return None
    nonce, mac = match.group(1), match.group(2).encode("ascii")
    matches = [
        hmac.compare_digest(mac, _mac(secret, nonce).encode("ascii"))
        for secret in accepted_secrets
        if secret
    ]
    return nonce if any(matches) else None


def is_nonce(value: object) -> bool:
    return isinstance(value, str) and bool(NONCE_PATTERN.fullmatch(value))


def looks_like_capability(presented: str) -> bool:
    return presented.startswith(f"{VERSION}.")
