"""What the functions that hand out pingback URLs (submit, in.php, register) share."""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard.settings.callback_secret import CallbackSecretSettings
from pingback_guard.settings.env import Env, expected_solve_seconds


@dataclass(frozen=True)
class PingbackIssueSettings:
    """What a function that hands out pingback URLs and records PENDING tasks needs."""

    callback_secret: CallbackSecretSettings
    public_base_url: str
    callback_timeout_seconds: float
    expected_solve_seconds: float

    @classmethod
    def from_env(cls, env: Env) -> PingbackIssueSettings:
        return cls(
            callback_secret=CallbackSecretSettings.from_env(env),
            public_base_url=env.url("PUBLIC_BASE_URL", required=False),
            callback_timeout_seconds=env.number("CALLBACK_TIMEOUT_SECONDS", 1, 3600),
            expected_solve_seconds=expected_solve_seconds(env),
        )
