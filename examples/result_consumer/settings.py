"""The example consumer's settings, read and validated once at cold start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Results are retried by EventBridge for up to 24 h: remember applied ones for longer.
DEFAULT_IDEMPOTENCY_SECONDS = 2 * 86400


class SettingsError(ValueError):
    pass


@dataclass(frozen=True)
class ConsumerSettings:
    idempotency_table_name: str
    applied_table_name: str
    idempotency_seconds: int = DEFAULT_IDEMPOTENCY_SECONDS

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ConsumerSettings:
        missing = [
            name
            for name in ("IDEMPOTENCY_TABLE_NAME", "APPLIED_TABLE_NAME")
            if not environ.get(name)
        ]
        if missing:
            raise SettingsError(f"missing environment variables: {', '.join(missing)}")
        return cls(
            idempotency_table_name=environ["IDEMPOTENCY_TABLE_NAME"],
            applied_table_name=environ["APPLIED_TABLE_NAME"],
        )
