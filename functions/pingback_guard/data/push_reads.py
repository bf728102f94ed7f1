"""The reads a push makes, each one table request: a result's task with its owner's connections,
and a subscribe's connection with the tasks it names (BatchGetItem, strongly consistent).

A result event already says whose task it is, so the task and that owner's connection record
are fetched together; a subscribe names its connection and up to 50 task ids, fetched together.
BatchGetItem returns at most 100 items and may leave keys unprocessed under throttling: those
are asked again (the only case of a second request).
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

# The item readers of the stores that write these items (private there; shared, not copied).
from pingback_guard.data.connections import (
    CONNECTION_KEY_PREFIX,
    Connection,
    _connection,
    owner_key,
)
from pingback_guard.data.dynamodb_table import dynamodb_call, item_to_python
from pingback_guard.data.task_items import task_from_item
from pingback_guard.domain.task import Task

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

# BatchGetItem's own bound on keys per request.
MAX_KEYS_PER_REQUEST = 100
# Unprocessed keys are asked again this many times at most (throttling: the paced GET covers it).
MAX_ROUNDS = 3


@dataclass(frozen=True)
class ResultForPush:
    task: Task | None
    connections: list[Connection]


@dataclass(frozen=True)
class Subscription:
    owner: str | None
    tasks: list[Task]


class PushReads(Protocol):
    def result_for_push(self, task_id: str, owner: str, now: float) -> ResultForPush:
        """The task and its owner's unexpired connections (the event's owner), in one read."""

    def subscription(self, connection_id: str, task_ids: Sequence[str]) -> Subscription:
        """Who holds the connection, and those of the tasks that exist, in one read."""


class DynamoDbPushReads:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def result_for_push(self, task_id: str, owner: str, now: float) -> ResultForPush:
        found = self._batch_get([task_id, owner_key(owner)])
        task_item = found.get(task_id)
        elements = (found.get(owner_key(owner)) or {}).get("connections") or set()
        connections = [_connection(owner, str(element)) for element in elements]
        return ResultForPush(
            task_from_item(task_item) if task_item else None,
            [connection for connection in connections if connection.expires_at > now],
        )

    def subscription(self, connection_id: str, task_ids: Sequence[str]) -> Subscription:
        connection_key = CONNECTION_KEY_PREFIX + connection_id
        found = self._batch_get([connection_key, *task_ids])
        owner = (found.get(connection_key) or {}).get("owner")
        tasks = [task_from_item(found[task_id]) for task_id in task_ids if task_id in found]
        return Subscription(str(owner) if owner else None, tasks)

    def _batch_get(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The items found, by key; keys asked for once each."""
        unique = list(dict.fromkeys(keys))
        if len(unique) > MAX_KEYS_PER_REQUEST:
            raise ValueError(f"at most {MAX_KEYS_PER_REQUEST} keys in one read")
        request: Mapping[str, Any] = {
            self._table: {
                "Keys": [{"task_id": {"S": key}} for key in unique],
                "ConsistentRead": True,
            }
        }
        found: dict[str, dict[str, Any]] = {}
        for _ in range(MAX_ROUNDS):
            answer = dynamodb_call(
                "BatchGetItem", self._client.batch_get_item, RequestItems=request
            )
            for raw in answer.get("Responses", {}).get(self._table, []):
                item = item_to_python(raw)
                found[str(item["task_id"])] = item
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                break
        return found
