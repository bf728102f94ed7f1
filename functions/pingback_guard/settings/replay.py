"""ReplayFunction's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env
from pingback_guard.settings.table import TableSettings


@dataclass(frozen=True)
class ReplaySettings:
    table: TableSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReplaySettings:
        return cls(table=TableSettings.from_env(Env(environ)))
