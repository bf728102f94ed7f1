"""CallbackFunction's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.callback_secret import CallbackSecretSettings
from pingback_guard.settings.env import Env
from pingback_guard.settings.table import TableSettings


@dataclass(frozen=True)
class CallbackSettings:
    table: TableSettings
    dead_letter_queue_url: str
    callback_secret: CallbackSecretSettings
    verification_token: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CallbackSettings:
        env = Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            dead_letter_queue_url=env.url("DEAD_LETTER_QUEUE_URL"),
            callback_secret=CallbackSecretSettings.from_env(env),
            verification_token=env.optional_text("PINGBACK_VERIFICATION_TOKEN"),
        )
