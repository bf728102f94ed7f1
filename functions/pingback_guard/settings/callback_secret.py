"""The callback secret: the callback verifies with it, submit and register sign with it."""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard.settings.env import Env, retention_seconds

# A revoked callback secret stops working within this long (per container cache).
DEFAULT_CALLBACK_SECRET_CACHE_SECONDS = 60


@dataclass(frozen=True)
class CallbackSecretSettings:
    """The callback secret, and how long the capabilities it signs count.

    A capability from POST /pingback-urls must be registered within the retention window of its
    issue; the provider may then deliver up to a retention window after that: a pingback URL is
    refused once it is two retention windows old.
    """

    secret_id: str
    cache_seconds: int
    registration_window_seconds: float

    @property
    def capability_max_age_seconds(self) -> float:
        return 2 * self.registration_window_seconds

    @classmethod
    def from_env(cls, env: Env) -> CallbackSecretSettings:
        return cls(
            secret_id=env.text("CALLBACK_SECRET_ID"),
            # Short on purpose: the cache age bounds how long a revoked callback secret still works.
            cache_seconds=env.integer(
                "CALLBACK_SECRET_CACHE_SECONDS", 0, 300, DEFAULT_CALLBACK_SECRET_CACHE_SECONDS
            ),
            registration_window_seconds=retention_seconds(env),
        )
