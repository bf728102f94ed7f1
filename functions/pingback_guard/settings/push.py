"""PushFunction's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env
from pingback_guard.settings.table import TableSettings

# API Gateway closes a WebSocket connection after 2 hours at most: a record outliving that is stale.
DEFAULT_PUSH_CONNECTION_TTL_SECONDS = 7200
DEFAULT_PUSH_MAX_CONNECTIONS_PER_OWNER = 100


@dataclass(frozen=True)
class PushSettings:
    table: TableSettings
    management_endpoint: str
    """The WebSocket API's @connections endpoint: https://{api}.execute-api.{region}.../{stage}."""
    connection_ttl_seconds: int
    max_connections_per_owner: int

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PushSettings:
        env = Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            management_endpoint=env.provider_url("PUSH_MANAGEMENT_ENDPOINT"),
            connection_ttl_seconds=env.integer(
                "PUSH_CONNECTION_TTL_SECONDS", 60, 86400, DEFAULT_PUSH_CONNECTION_TTL_SECONDS
            ),
            max_connections_per_owner=env.integer(
                "PUSH_MAX_CONNECTIONS_PER_OWNER", 1, 1000, DEFAULT_PUSH_MAX_CONNECTIONS_PER_OWNER
            ),
        )
