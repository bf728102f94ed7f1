"""The callback secret, and the check that a pingback URL's path was issued by this stack."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pingback_guard.logic import capability
from pingback_guard.logic.capability import ProvenCapability

MAX_SECRET_LENGTH = 128
SECRET_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")
# A capability "issued" this far in the future still counts (clocks of two functions differ).
MAX_CLOCK_SKEW_SECONDS = 300


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

    def proof(self, presented: str) -> ProvenCapability | None:
        """Both secrets are tried, so a rotation loses no pingback already handed out."""
        return capability.proven(presented, (self.current, self.previous))


@dataclass(frozen=True)
class CapabilityLifetime:
    """How long a capability counts after its issue: a provider may deliver a pingback up to
    ``max_age_seconds`` after it (the registration window plus the retention window)."""

    max_age_seconds: float

    def is_live(self, issued_at: float, now: float) -> bool:
        return now - self.max_age_seconds <= issued_at <= now + MAX_CLOCK_SKEW_SECONDS


class CallbackAuthenticator:
    """Checks the path's capability; on a miss, re-reads the secret at most once per interval.

    The re-read lets a rotated secret work before the cache expires, and the interval keeps a
    flood of forged callbacks from turning into a flood of Secrets Manager calls. A capability
    with a valid MAC but past its lifetime is refused like a forged one.
    """

    def __init__(
        self,
        load_secrets: Callable[[bool], CallbackSecrets],
        lifetime: CapabilityLifetime,
        refresh_interval_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._load = load_secrets
        self._lifetime = lifetime
        self._refresh_interval = refresh_interval_seconds
        self._clock = clock
        self._wall_clock = wall_clock
        self._last_forced_refresh = -refresh_interval_seconds

    def verify(self, presented: object) -> ProvenCapability | None:
        proof = self._proof(presented)
        if proof is None or not self._lifetime.is_live(proof.issued_at, self._wall_clock()):
            return None
        return proof

    def _proof(self, presented: object) -> ProvenCapability | None:
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
