"""SubmitFunction's settings (in.php, CompatSubmitFunction, submits the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env
from pingback_guard.settings.pingbacks import PingbackIssueSettings
from pingback_guard.settings.provider import ProviderSettings
from pingback_guard.settings.table import TableSettings


@dataclass(frozen=True)
class SubmitSettings:
    table: TableSettings
    provider: ProviderSettings
    dead_letter_queue_url: str
    pingbacks: PingbackIssueSettings
    poller_function_name: str
    wake_poller: bool
    """Start the poller when a task is recorded while none sweeps on (PollerWakeOnSubmit)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SubmitSettings:
        env = Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            provider=ProviderSettings.from_env(env),
            dead_letter_queue_url=env.url("DEAD_LETTER_QUEUE_URL"),
            pingbacks=PingbackIssueSettings.from_env(env),
            poller_function_name=env.text("POLLER_FUNCTION_NAME"),
            wake_poller=env.flag("POLLER_WAKE_ON_SUBMIT"),
        )
