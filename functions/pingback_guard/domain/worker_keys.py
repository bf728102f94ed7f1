"""Per-worker keys of the in.php/res.php endpoint: what a key is and how it is kept.

A key is 32 lowercase hex characters (128 random bits, the length 2captcha clients expect). The
stack keeps only its SHA-256: the first 16 hex characters name the record (the key id an operator
sees), the whole digest is compared in constant time. With 128 random bits an unsalted hash is
enough: there is nothing to guess from it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum

KEY_PATTERN = re.compile(r"[0-9a-f]{32}")
KEY_ID_LENGTH = 16
# A key's capacity in threads (tasks in flight at once) when its record names none: CaptchaAI sells
# plans by threads and its docs give no per-worker figure; `keys issue --threads N` sets another.
DEFAULT_THREADS = 10
MAX_THREADS = 1000


class Dialect(StrEnum):
    """The client family a key serves: how its "busy" answers read (logic/dialects.py).
    CaptchaAI's is the default: it is the mission's provider."""

    CAPTCHAAI = "captchaai"
    TWOCAPTCHA = "2captcha"


@dataclass(frozen=True)
class KeyDigest:
    key_id: str
    digest: str


def digest_of(key: str) -> KeyDigest:
    digest = hashlib.sha256(key.encode("ascii")).hexdigest()
    return KeyDigest(digest[:KEY_ID_LENGTH], digest)


def is_well_formed(key: object) -> bool:
    return isinstance(key, str) and KEY_PATTERN.fullmatch(key) is not None


def new_key() -> str:
    return secrets.token_hex(16)


@dataclass(frozen=True)
class WorkerKey:
    """A key's record: whose tasks it submits and reads, and whether it still works."""

    key_id: str
    digest: str
    owner: str
    created_at: float
    label: str = ""
    revoked_at: float | None = None
    threads: int = DEFAULT_THREADS
    dialect: Dialect = Dialect.CAPTCHAAI


def dialect_named(name: str | None) -> Dialect:
    """A record's dialect; one it does not name (issued before dialects) is the default."""
    try:
        return Dialect(name or Dialect.CAPTCHAAI.value)
    except ValueError:
        return Dialect.CAPTCHAAI


def threads_of(raw: str | None) -> int:
    """A record's thread capacity; a missing or unreadable one is the default."""
    try:
        value = int(raw or DEFAULT_THREADS)
    except ValueError:
        return DEFAULT_THREADS
    return min(max(value, 1), MAX_THREADS)
