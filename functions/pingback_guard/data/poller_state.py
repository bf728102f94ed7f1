"""Whether the poller is sweeping: its lease item's end and when a holder last had work (one
GetItem of the lease item, eventually consistent: a second's staleness moves one read-through).

An invocation holds the lease to its deadline while it sweeps and gives it back (lease_until =
then) when it stops; ``busy_at`` says when a holder last had a task to check (the next
invocation then sweeps to its end too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pingback_guard.data.dynamodb_table import dynamodb_call
from pingback_guard.data.poller_lease import POLLER_LEASE_KEY

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


@dataclass(frozen=True)
class PollerLeaseState:
    lease_until: float | None
    """When the poller's lease ends (None: never taken)."""
    busy_at: float | None
    """When a holder last had a task to check (None: never)."""


class PollerState(Protocol):
    def lease(self) -> PollerLeaseState: ...


class DynamoDbPollerState:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def lease(self) -> PollerLeaseState:
        answer = dynamodb_call(
            "GetItem",
            self._client.get_item,
            TableName=self._table,
            Key={"task_id": {"S": POLLER_LEASE_KEY}},
            ProjectionExpression="lease_until, busy_at",
        )
        item = answer.get("Item", {})
        return PollerLeaseState(_number(item, "lease_until"), _number(item, "busy_at"))


def _number(item: dict[str, dict[str, str]], name: str) -> float | None:
    raw = item.get(name, {}).get("N")
    return float(raw) if raw is not None else None
