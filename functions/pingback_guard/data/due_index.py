"""A PENDING task's poll state: the sparse, write-sharded due index (due_shard, due_at) the
poller queries, and the writes that move, mark or end a task's polling."""

from __future__ import annotations

import heapq
import itertools
import zlib
from collections.abc import Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pingback_guard.data.dynamodb_table import (
    ConditionRefused,
    ItemTable,
    float_or_none,
    item_to_python,
    values,
)
from pingback_guard.domain.task import DueTask, TaskStatus

QUERY_PAGE_SIZE = 500
# Shards queried at once: below botocore's connection pool (10) per client.
SHARD_READERS = 8


def due_shard_of(task_id: str, shards: int) -> str:
    """Spread PENDING tasks over ``shards`` index partitions, stable per task."""
    return str(zlib.crc32(task_id.encode()) % shards)


class DueIndex:
    def __init__(self, table: ItemTable) -> None:
        self._table = table
        self._readers = ThreadPoolExecutor(
            min(table.settings.due_shards, SHARD_READERS), thread_name_prefix="due-index"
        )

    @property
    def shard_count(self) -> int:
        return self._table.settings.due_shards

    def _shards(self, shards: Collection[int] | None) -> list[str]:
        every = range(self.shard_count)
        return [str(shard) for shard in every if shards is None or shard in shards]

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        """The ``limit`` most overdue, whichever shards hold them: each shard's oldest ``limit``
        (a Query returns a partition's items in sort key order, ascending by default:
        https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.KeyConditionExpressions.html),
        merged by due time. Walking the
        shards in turn and stopping at the limit left a backlog's oldest tasks in the shards not
        reached, unchecked until the provider had forgotten them. The shards are queried at
        once: a read of the index takes one Query's time, not one per shard."""
        oldest = self._readers.map(
            lambda shard: list(self._due_in_shard(shard, now, limit)), self._shards(shards)
        )
        return heapq.nsmallest(
            limit, itertools.chain.from_iterable(oldest), key=lambda task: task.due_at
        )

    def _due_in_shard(self, shard: str, now: float, limit: int) -> Iterator[DueTask]:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": self._table.settings.due_index_name,
            "KeyConditionExpression": "due_shard = :shard AND due_at <= :now",
            "ProjectionExpression": "task_id, due_at, submitted_at, poll_attempts,"
            " last_checked_at, #method",
            "ExpressionAttributeNames": {"#method": "method"},
            "ExpressionAttributeValues": values(shard=shard, now=now),
        }
        remaining = limit
        while remaining > 0:
            page = self._table.call(
                "Query", self._table.client.query, **request, Limit=min(remaining, QUERY_PAGE_SIZE)
            )
            for raw in page.get("Items", []):
                remaining -= 1
                yield _due_task_from_item(item_to_python(raw))
            last_key = page.get("LastEvaluatedKey")
            if not last_key:
                return
            request["ExclusiveStartKey"] = last_key

    def next_due_at(
        self, after: float, until: float, shards: Collection[int] | None = None
    ) -> float | None:
        earliest = [
            due_at
            for due_at in self._readers.map(
                lambda shard: self._first_due(shard, after, until), self._shards(shards)
            )
            if due_at is not None
        ]
        return min(earliest, default=None)

    def _first_due(self, shard: str, after: float, until: float) -> float | None:
        page = self._table.call(
            "Query",
            self._table.client.query,
            TableName=self._table.name,
            IndexName=self._table.settings.due_index_name,
            KeyConditionExpression="due_shard = :shard AND due_at BETWEEN :after AND :until",
            ProjectionExpression="due_at",
            ExpressionAttributeValues=values(shard=shard, after=after, until=until),
            Limit=1,
        )
        return next((float(item_to_python(raw)["due_at"]) for raw in page.get("Items", [])), None)

    def reschedule_poll(
        self,
        task_id: str,
        due_at: float,
        poll_attempts: int,
        last_checked_at: float | None = None,
    ) -> bool:
        checked = "" if last_checked_at is None else ", last_checked_at = :checked"
        extra = {} if last_checked_at is None else {"checked": last_checked_at}
        return self._while_pending(
            task_id,
            f"SET due_at = :due, poll_attempts = :attempts{checked}",
            "",
            {"due": due_at, "attempts": poll_attempts, **extra},
        )

    def mark_expired(self, task_id: str, now: float) -> bool:
        return self._while_pending(
            task_id,
            "SET #status = :expired, #error = :reason, received_at = :now, expires_at = :ttl"
            " REMOVE due_shard, due_at",
            "",
            {
                "expired": TaskStatus.EXPIRED.value,
                "reason": "EXPIRED_UNRECOVERED",
                "now": now,
                "ttl": self._table.expiry(now),
            },
            names={"#error": "error"},
        )

    def claim_read_through(self, task_id: str, now: float, interval_seconds: float) -> bool:
        return self._while_pending(
            task_id,
            "SET read_through_at = :now",
            " AND (attribute_not_exists(read_through_at) OR read_through_at <= :cutoff)",
            {"now": now, "cutoff": now - interval_seconds},
        )

    def record_not_ready(self, task_id: str, checked_at: float) -> bool:
        return self._while_pending(
            task_id,
            "SET last_checked_at = :at",
            " AND (attribute_not_exists(last_checked_at) OR last_checked_at < :at)",
            {"at": checked_at},
        )

    def _while_pending(
        self,
        task_id: str,
        expression: str,
        condition: str,
        written: Mapping[str, object],
        names: Mapping[str, str] | None = None,
    ) -> bool:
        """One write that holds only while the task is PENDING; False when it no longer was."""
        try:
            self._table.update(
                task_id,
                expression,
                condition=f"#status = :pending{condition}",
                names={"#status": "status", **(names or {})},
                values=values(**written, pending=TaskStatus.PENDING.value),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True


def _due_task_from_item(item: Mapping[str, Any]) -> DueTask:
    return DueTask(
        task_id=str(item["task_id"]),
        due_at=float(item["due_at"]),
        submitted_at=float_or_none(item.get("submitted_at")) or float(item["due_at"]),
        poll_attempts=int(item.get("poll_attempts", 0)),
        last_checked_at=float_or_none(item.get("last_checked_at")),
        method=str(item["method"]) if "method" in item else None,
    )
