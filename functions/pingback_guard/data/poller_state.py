"""Whether a poller invocation is sweeping: the end of the poller's lease (one GetItem of the
lease item, eventually consistent: a second's staleness only moves one read-through).

An invocation holds the lease to its deadline while it sweeps and gives it back (lease_until =
then) when it stops, so a lease that ends in the future means a poller is checking due tasks
every sweep interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pingback_guard.data.dynamodb import POLLER_LEASE_KEY, dynamodb_call

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


class PollerState(Protocol):
    def lease_until(self) -> float | None:
        """When the poller's lease ends (None: never taken)."""


class DynamoDbPollerState:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def lease_until(self) -> float | None:
        answer = dynamodb_call(
            "GetItem",
            self._client.get_item,
            TableName=self._table,
            Key={"task_id": {"S": POLLER_LEASE_KEY}},
            ProjectionExpression="lease_until",
        )
        raw = answer.get("Item", {}).get("lease_until", {}).get("N")
        return float(raw) if raw is not None else None
