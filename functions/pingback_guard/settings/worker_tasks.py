"""The settings of a worker's routes on its own tasks: GetTaskFunction's and ReportFunction's
(res.php, CompatResultFunction, holds both)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pingback_guard.settings.env import (
    Env,
    admin_principal,
    backoff_max_seconds,
    expected_solve_seconds,
    report_window_seconds,
    sweep_interval_seconds,
)
from pingback_guard.settings.provider import ProviderSettings
from pingback_guard.settings.table import TableSettings


@dataclass(frozen=True)
class WorkerTaskSettings:
    """What a worker's routes on its own tasks share (the admin principal sees every task), with
    the provider at hand for the read-through and the report."""

    table: TableSettings
    provider: ProviderSettings
    admin_principal_arn: str

    @staticmethod
    def common(env: Env) -> dict[str, Any]:
        return {
            "table": TableSettings.from_env(env),
            "provider": ProviderSettings.from_env(env),
            # Compared as callers are: a role ARN without its path (domain/principals.py).
            "admin_principal_arn": admin_principal(env),
        }


@dataclass(frozen=True)
class GetTaskSettings(WorkerTaskSettings):
    read_through_interval_seconds: float
    read_through_max_gap_seconds: float
    expected_solve_seconds: float
    poll_sweep_interval_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GetTaskSettings:
        env = Env(environ)
        return cls(
            **cls.common(env),
            read_through_interval_seconds=env.number("READ_THROUGH_INTERVAL_SECONDS", 0.1, 3600),
            read_through_max_gap_seconds=backoff_max_seconds(env),
            expected_solve_seconds=expected_solve_seconds(env),
            poll_sweep_interval_seconds=sweep_interval_seconds(env),
        )


@dataclass(frozen=True)
class ReportSettings(WorkerTaskSettings):
    report_window_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReportSettings:
        env = Env(environ)
        return cls(
            **cls.common(env),
            report_window_seconds=report_window_seconds(env),
        )
