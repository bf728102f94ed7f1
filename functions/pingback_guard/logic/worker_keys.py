"""Who a per-worker key speaks for: the owner its record names, unless revoked, counted as the IAM
routes and $connect count the principal (domain/principals.py): a key and its principal see the
same tasks and get the same pushes. The CLI stores owners so; a record issued before it did (an
assumed-role session, a role ARN with a path) is read so too."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from enum import StrEnum

from pingback_guard.data.worker_keys import WorkerKeyStore
from pingback_guard.domain.principals import owner_of
from pingback_guard.domain.worker_keys import Dialect, digest_of, is_well_formed


class KeyRefusal(StrEnum):
    """The protocol's answers for a key that speaks for nobody."""

    MALFORMED = "ERROR_WRONG_USER_KEY"
    UNKNOWN = "ERROR_KEY_DOES_NOT_EXIST"  # never issued, or revoked: the caller cannot tell


@dataclass(frozen=True)
class KeyHolder:
    """Who a key speaks for, and what its record says of its capacity and its clients."""

    owner: str
    key_id: str
    threads: int
    dialect: Dialect


class WorkerKeys:
    def __init__(self, store: WorkerKeyStore) -> None:
        self._store = store

    def owner_of(self, key: object) -> str | KeyRefusal:
        """The key's owner, or why it is refused. A StoreError is the caller's to answer."""
        holder = self.holder_of(key)
        return holder if isinstance(holder, KeyRefusal) else holder.owner

    def holder_of(self, key: object) -> KeyHolder | KeyRefusal:
        """The key's holder, or why it is refused. A StoreError is the caller's to answer."""
        if not is_well_formed(key):
            return KeyRefusal.MALFORMED
        wanted = digest_of(str(key))
        record = self._store.find(wanted.key_id)
        if record is None or not hmac.compare_digest(record.digest, wanted.digest):
            return KeyRefusal.UNKNOWN
        if record.revoked_at is not None or not record.owner:
            return KeyRefusal.UNKNOWN
        return KeyHolder(owner_of(record.owner), record.key_id, record.threads, record.dialect)
