"""CompatSubmitFunction's settings (in.php)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env, allow_loopback_pingbacks
from pingback_guard.settings.key_budget import KeyBudgetSettings
from pingback_guard.settings.submit import SubmitSettings


@dataclass(frozen=True)
class CompatSubmitSettings:
    """in.php on the stack's API: a submit like POST /tasks, with per-worker keys."""

    submit: SubmitSettings
    worker_keys_table: str
    allow_loopback_pingbacks: bool
    budget: KeyBudgetSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CompatSubmitSettings:
        env = Env(environ)
        return cls(
            submit=SubmitSettings.from_env(environ),
            worker_keys_table=env.text("WORKER_KEYS_TABLE_NAME"),
            allow_loopback_pingbacks=allow_loopback_pingbacks(env),
            budget=KeyBudgetSettings.from_env(env, "IN_PHP"),
        )
