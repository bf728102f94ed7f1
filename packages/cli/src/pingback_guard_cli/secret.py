"""`secret rotate` and `secret retire`: the callback secret's current / previous pair.

The retirement rule (docs/operations.md says the same): the previous secret stays accepted until
RetentionSeconds plus the functions' secret cache have passed since the rotation. By then every
task whose pingback URL was made under it is finished or EXPIRED; dropping it earlier makes those
pingbacks 403 (the poller still recovers their results from res.php).
"""

from __future__ import annotations

import datetime
import json
import time
from dataclasses import dataclass
from typing import Any

from pingback_guard_cli.errors import CliFailure, ExitCode
from pingback_guard_cli.output import duration, when
from pingback_guard_cli.stack import Aws, Stack

SECRET_LENGTH = 40
# The functions' CALLBACK_SECRET_CACHE_SECONDS default: how long a warm container keeps its copy.
SECRET_CACHE_SECONDS = 60
DEFAULT_RETENTION_SECONDS = 600
RETIREMENT_RULE = (
    f"retire the previous secret once RetentionSeconds + {SECRET_CACHE_SECONDS} s (the"
    " functions' secret cache) have passed since the rotation"
)


@dataclass(frozen=True)
class SecretState:
    arn: str
    document: dict[str, Any]
    rotated_at: float | None
    """When the current version was written (Secrets Manager's CreatedDate)."""
    retention_seconds: int

    @property
    def has_previous(self) -> bool:
        return bool(self.document.get("previous"))

    @property
    def retire_after(self) -> float | None:
        if self.rotated_at is None:
            return None
        return self.rotated_at + self.retention_seconds + SECRET_CACHE_SECONDS

    def rule_here(self, now: float) -> str:
        """The rule with this stack's numbers, and the moment it allows."""
        wait = duration(self.retention_seconds + SECRET_CACHE_SECONDS)
        text = f"{RETIREMENT_RULE}: {self.retention_seconds} s + {SECRET_CACHE_SECONDS} s = {wait}"
        if self.retire_after is not None:
            text += f", i.e. after {when(self.retire_after, now)}"
        return text


@dataclass(frozen=True)
class Rotation:
    secret_arn: str
    version_id: str
    retire_after: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "secret_arn": self.secret_arn,
            "version_id": self.version_id,
            "retire_after": self.retire_after,
            "rule": RETIREMENT_RULE,
        }


def read_state(aws: Aws, stack: Stack) -> SecretState:
    arn = stack.output("CallbackSecretArn")
    client = aws.client("secretsmanager")
    document = json.loads(client.get_secret_value(SecretId=arn)["SecretString"])
    if not isinstance(document, dict) or not document.get("current"):
        raise CliFailure(ExitCode.FAILED, "the callback secret has no `current` value to keep")
    retention = stack.parameters.get("RetentionSeconds") or DEFAULT_RETENTION_SECONDS
    return SecretState(arn, document, _current_written_at(client, arn), int(retention))


def _current_written_at(client: Any, arn: str) -> float | None:
    versions = client.list_secret_version_ids(SecretId=arn).get("Versions", [])
    for version in versions:
        if "AWSCURRENT" in version.get("VersionStages", []) and version.get("CreatedDate"):
            created: datetime.datetime = version["CreatedDate"]
            return created.timestamp()
    return None


def rotate(aws: Aws, stack: Stack, force: bool, now: float | None = None) -> Rotation:
    """A new current secret; the old current one becomes previous (still accepted).

    Refused while a previous secret is set, unless `force`: rotating would drop it.
    """
    now = time.time() if now is None else now
    state = read_state(aws, stack)
    if state.has_previous and not force:
        raise CliFailure(
            ExitCode.FAILED,
            "refused: a previous secret is still accepted, and rotating now would drop it (pingback"
            " URLs made under it would get 403). "
            + state.rule_here(now)
            + ": run `pingback-guard secret retire` then, and rotate after it;"
            " or pass --force to drop it now (a leaked secret).",
        )
    client = aws.client("secretsmanager")
    new = client.get_random_password(
        PasswordLength=SECRET_LENGTH, ExcludePunctuation=True, RequireEachIncludedType=True
    )["RandomPassword"]
    # Other keys of the document are kept as they are.
    rotated = {**state.document, "current": new, "previous": state.document["current"]}
    answer = client.put_secret_value(SecretId=state.arn, SecretString=json.dumps(rotated))
    retire_after = now + state.retention_seconds + SECRET_CACHE_SECONDS
    return Rotation(state.arn, str(answer["VersionId"]), retire_after)


def retire(aws: Aws, stack: Stack, force: bool, now: float | None = None) -> bool:
    """Stops accepting the previous secret; False when there was none.

    Refused before the retirement rule allows it, unless `force`.
    """
    now = time.time() if now is None else now
    state = read_state(aws, stack)
    if not state.has_previous:
        return False
    too_early = state.retire_after is not None and now < state.retire_after
    if too_early and not force:
        raise CliFailure(
            ExitCode.FAILED,
            "refused: too early to retire the previous secret (pingback URLs made under it may"
            " still be called). " + state.rule_here(now) + "; or pass --force (a leaked secret).",
        )
    retired = {**state.document, "previous": ""}
    aws.client("secretsmanager").put_secret_value(
        SecretId=state.arn, SecretString=json.dumps(retired)
    )
    return True
