"""ForwardFunction's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env, allow_loopback_pingbacks
from pingback_guard.settings.table import TableSettings


@dataclass(frozen=True)
class ForwardSettings:
    """The result forward reads the task (its result and the worker's own pingback URL)."""

    table: TableSettings
    allow_loopback_pingbacks: bool

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ForwardSettings:
        env = Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            allow_loopback_pingbacks=allow_loopback_pingbacks(env),
        )
