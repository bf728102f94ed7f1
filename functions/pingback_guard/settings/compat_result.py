"""CompatResultFunction's settings (res.php)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env, report_window_seconds
from pingback_guard.settings.key_budget import KeyBudgetSettings
from pingback_guard.settings.worker_tasks import GetTaskSettings


@dataclass(frozen=True)
class CompatResultSettings:
    """res.php on the stack's API: GET /tasks/{id}'s read, the report and the balance."""

    get_task: GetTaskSettings
    report_window_seconds: float
    worker_keys_table: str
    budget: KeyBudgetSettings
    # The provider is asked for the balance at most this often, for the whole stack.
    balance_cache_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CompatResultSettings:
        env = Env(environ)
        return cls(
            get_task=GetTaskSettings.from_env(environ),
            report_window_seconds=report_window_seconds(env),
            worker_keys_table=env.text("WORKER_KEYS_TABLE_NAME"),
            budget=KeyBudgetSettings.from_env(env, "RES_PHP"),
            balance_cache_seconds=env.number("BALANCE_CACHE_SECONDS", 10, 3600),
        )
