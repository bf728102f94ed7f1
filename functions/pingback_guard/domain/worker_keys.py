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

KEY_PATTERN = re.compile(r"[0-9a-f]{32}")
KEY_ID_LENGTH = 16


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
