"""The callback secret, and the check that a pingback URL's path was issued by this stack."""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pingback_guard.logic import capability

MAX_SECRET_LENGTH = 128
SECRET_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")


@dataclass(frozen=True)
class PingbackProof:
    """What the path proved: a capability's nonce, or (nonce None) the pre-upgrade whole secret.

    The whole secret only decides tasks recorded without a nonce (in flight at the upgrade).
    """

    nonce: str | None


@dataclass(frozen=True)
class CallbackSecrets:
    current: str
    previous: str = ""

    @classmethod
    def from_document(cls, document: object) -> CallbackSecrets:
        if not isinstance(document, Mapping):
            raise ValueError("callback secret must be a JSON object")
        current = str(document.get("current", ""))
        previous = str(document.get("previous", "") or "")
        if not SECRET_PATTERN.fullmatch(current):
            raise ValueError("callback secret 'current' must be 16-128 URL-safe characters")
        if previous and not SECRET_PATTERN.fullmatch(previous):
            raise ValueError("callback secret 'previous' must be 16-128 URL-safe characters")
        return cls(current=current, previous=previous)

    def accepts(self, presented: str) -> bool:
        """Constant-time compare against both secrets, so rotation loses no pingback."""
        if not SECRET_PATTERN.fullmatch(presented):
            return False
        candidate = presented.encode()
        matches = [hmac.compare_digest(candidate, self.current.encode())]
        if self.previous:
            matches.append(hmac.compare_digest(candidate, self.previous.encode()))
        return any(matches)

    def proof(self, presented: str) -> PingbackProof | None:
        if capability.looks_like_capability(presented):
            nonce = capability.proven_nonce(presented, (self.current, self.previous))
            return PingbackProof(nonce) if nonce else None
        return PingbackProof(None) if self.accepts(presented) else None


class CallbackAuthenticator:
    """Checks the path secret; on a miss, re-reads the secret at most once per interval.

    The re-read lets a rotated secret work before the cache expires, and the interval keeps a
    flood of forged callbacks from turning into a flood of Secrets Manager calls.
    """

    def __init__(
        self,
        load_secrets: Callable[[bool], CallbackSecrets],
        refresh_interval_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load_secrets
        self._refresh_interval = refresh_interval_seconds
        self._clock = clock
        self._last_forced_refresh = -refresh_interval_seconds

    def verify(self, presented: object) -> PingbackProof | None:
        if not isinstance(presented, str) or not presented or len(presented) > MAX_SECRET_LENGTH:
            return None
        proof = self._load(False).proof(presented)
        if proof is not None:
            return proof
        now = self._clock()
        if now - self._last_forced_refresh < self._refresh_interval:
            return None
        self._last_forced_refresh = now
        return self._load(True).proof(presented)
