"""RegisterFunction's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pingback_guard.settings.env import Env, admin_principal
from pingback_guard.settings.pingbacks import PingbackIssueSettings
from pingback_guard.settings.provider import ProviderSettings
from pingback_guard.settings.table import TableSettings


@dataclass(frozen=True)
class RegisterSettings:
    """POST /pingback-urls and PUT /tasks/{task_id}: tasks submitted outside the stack; and the
    smoke check's synthetic tasks (/smoke-tasks, the admin principal's only)."""

    table: TableSettings
    pingbacks: PingbackIssueSettings
    # res.php: a registered id must be one the provider has handed out.
    provider: ProviderSettings
    admin_principal_arn: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RegisterSettings:
        env = Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            pingbacks=PingbackIssueSettings.from_env(env),
            provider=ProviderSettings.from_env(env),
            admin_principal_arn=admin_principal(env),
        )
