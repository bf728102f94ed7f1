"""Per-task pingback capabilities: ``v2.<nonce>.<issued_at>.<mac>``, checked without the table.

nonce: 16 random bytes, base64url. issued_at: the issue time, 10 decimal digits of epoch
seconds. mac: HMAC-SHA256 of ``v2.<nonce>.<issued_at>`` under a key derived from the stack's
callback secret with HKDF (RFC 5869) and a purpose label, truncated to 16 bytes, base64url. No
URL ever carries the secret or the key; the issue time cannot be changed without the key, so the
callback can refuse an old capability; the table decides which task the nonce belongs to.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

VERSION = "v2"
NONCE_BYTES = 16
MAC_BYTES = 16
ISSUED_AT_DIGITS = 10
_B64_16_BYTES = r"[A-Za-z0-9_-]{21}[AQgw]"  # 16 bytes base64url without padding: 22 characters
NONCE_PATTERN = re.compile(_B64_16_BYTES)
CAPABILITY_PATTERN = re.compile(
    rf"v2\.({_B64_16_BYTES})\.([0-9]{{{ISSUED_AT_DIGITS}}})\.({_B64_16_BYTES})"
)
CAPABILITY_LENGTH = len(VERSION) + 3 + 22 + ISSUED_AT_DIGITS + 22
# HKDF's salt and info: the derived key signs pingback capabilities and nothing else.
_HKDF_SALT = b"pingback-guard"
_HKDF_INFO = b"pingback-guard callback capability v2"


@dataclass(frozen=True)
class Capability:
    nonce: str
    issued_at: int
    token: str


@dataclass(frozen=True)
class ProvenCapability:
    """What a capability's MAC proves: its nonce and when it was issued."""

    nonce: str
    issued_at: int


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@functools.lru_cache(maxsize=8)
def mac_key(secret: str) -> bytes:
    """HKDF-SHA256 (extract, then one block of expand) of the secret for this one purpose."""
    pseudo_random_key = hmac.new(_HKDF_SALT, secret.encode("utf-8"), hashlib.sha256).digest()
    return hmac.new(pseudo_random_key, _HKDF_INFO + b"\x01", hashlib.sha256).digest()


def _mac(secret: str, nonce: str, issued_at: str) -> str:
    signed = f"{VERSION}.{nonce}.{issued_at}".encode("ascii")
    return _b64(hmac.new(mac_key(secret), signed, hashlib.sha256).digest()[:MAC_BYTES])


def token_for(secret: str, nonce: str, issued_at: int) -> str:
    """The capability of a recorded nonce issued at ``issued_at`` (epoch seconds)."""
    issued = f"{issued_at:0{ISSUED_AT_DIGITS}d}"
    return f"{VERSION}.{nonce}.{issued}.{_mac(secret, nonce, issued)}"


def mint(
    secret: str,
    issued_at: float,
    random_bytes: Callable[[int], bytes] = secrets.token_bytes,
) -> Capability:
    nonce = _b64(random_bytes(NONCE_BYTES))
    issued = int(issued_at)
    return Capability(nonce, issued, token_for(secret, nonce, issued))


def proven(presented: str, accepted_secrets: Iterable[str]) -> ProvenCapability | None:
    """The nonce and issue time a well-formed capability proves under any accepted secret.

    Every accepted secret is compared, in constant time, whatever the earlier ones gave. The
    caller judges the issue time (how old a capability may be depends on what it is used for).
    """
    if len(presented) != CAPABILITY_LENGTH:
        return None
    match = CAPABILITY_PATTERN.fullmatch(presented)
    if match is None:
        return None
    nonce, issued, mac = match.group(1), match.group(2), match.group(3).encode("ascii")
    matches = [
        hmac.compare_digest(mac, _mac(secret, nonce, issued).encode("ascii"))
        for secret in accepted_secrets
        if secret
    ]
    return ProvenCapability(nonce, int(issued)) if any(matches) else None


def is_nonce(value: object) -> bool:
    return isinstance(value, str) and bool(NONCE_PATTERN.fullmatch(value))
