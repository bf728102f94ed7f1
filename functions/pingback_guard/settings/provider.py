"""The provider (in.php / res.php) as the functions that call it see it."""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard.settings.env import Env


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str
    api_key_parameter: str
    api_key_cache_seconds: int
    connect_timeout_seconds: float
    call_deadline_seconds: float

    @property
    def call_bound_seconds(self) -> float:
        """The longest one res.php request may take: its connect, then its whole answer within
        the call deadline (CaptchaAiClient never retries a res.php request)."""
        return self.connect_timeout_seconds + self.call_deadline_seconds

    @classmethod
    def from_env(cls, env: Env) -> ProviderSettings:
        return cls(
            base_url=env.provider_url("PROVIDER_BASE_URL"),
            api_key_parameter=env.text("PROVIDER_API_KEY_PARAMETER"),
            api_key_cache_seconds=env.integer("SECRET_CACHE_SECONDS", 0, 3600, 300),
            connect_timeout_seconds=env.number("PROVIDER_CONNECT_TIMEOUT_SECONDS", 0.1, 30, 3.05),
            call_deadline_seconds=env.number("PROVIDER_CALL_DEADLINE_SECONDS", 0.2, 60, 10),
        )
