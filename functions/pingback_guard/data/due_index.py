"""A PENDING task's poll state: the sparse, write-sharded due index (due_shard, due_at) the
poller queries, and the writes that move, mark or end a task's polling."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator, Mapping
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


def due_shard_of(task_id: str, shards: int) -> str:
    """Spread PENDING tasks over ``shards`` index partitions, stable per task."""
    return str(zlib.crc32(task_id.encode()) % shards)


class DueIndex:
    def __init__(self, table: ItemTable) -> None:
        self._table = table
        self._shard_rotation = itertools.cycle(range(table.settings.due_shards))

    def due_tasks(self, now: float, limit: int) -> list[DueTask]:
        """Query every shard of the sparse index, starting at a rotating shard for fairness."""
        first = next(self._shard_rotation)
        shards = self._table.settings.due_shards
        found: list[DueTask] = []
        for offset in range(shards):
            if len(found) >= limit:
                break
            shard = str((first + offset) % shards)
            found.extend(self._due_in_shard(shard, now, limit - len(found)))
        return found

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

    def next_due_at(self, after: float, until: float) -> float | None:
        earliest: float | None = None
        for shard in range(self._table.settings.due_shards):
            page = self._table.call(
                "Query",
                self._table.client.query,
                TableName=self._table.name,
                IndexName=self._table.settings.due_index_name,
                KeyConditionExpression="due_shard = :shard AND due_at BETWEEN :after AND :until",
                ProjectionExpression="due_at",
                ExpressionAttributeValues=values(shard=str(shard), after=after, until=until),
                Limit=1,
            )
            for raw in page.get("Items", []):
                found = float(item_to_python(raw)["due_at"])
                earliest = found if earliest is None else min(earliest, found)
        return earliest

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
