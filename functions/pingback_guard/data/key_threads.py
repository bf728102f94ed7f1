"""A worker key's threads in flight, in the request budgets table (the only code that reads or
writes these items): ``threads#<key id>`` holds ``slots``, a map of the key's tasks in flight (a
task id, or the token of a submit still on its way to the provider) to when each stops counting,
``busy_until`` (the key was refused for its request rate until then) and ``version`` (each write
takes the next one, so two submits never take the same last thread). The item expires by the
table's TTL once its last slot has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pingback_guard.data.dynamodb_table import ConditionRefused, dynamodb_call

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

THREADS_PREFIX = "threads#"
# Optimistic writes tried before a crowded key's submit is answered "busy" (it retries).
WRITE_ATTEMPTS = 4
# Expired slots dropped by one write: the expression stays small.
PRUNED_PER_WRITE = 20


@dataclass(frozen=True)
class ThreadSlots:
    """What the item holds: the slots (name -> until) and until when the key was refused."""

    slots: Mapping[str, float]
    busy_until: float = 0.0
    version: int = 0

    def live(self, now: float) -> dict[str, float]:
        return {name: until for name, until in self.slots.items() if until > now}


class KeyThreadStore(Protocol):
    def read(self, key_id: str) -> ThreadSlots:
        """The key's slots (none when the key never had one)."""

    def take(self, key_id: str, slot: str, until: float, now: float, threads: int) -> bool:
        """Hold ``slot`` until ``until`` when fewer than ``threads`` slots are live at ``now``;
        False (nothing written) when the key has no free thread."""

    def rename(self, key_id: str, old: str, new: str, until: float) -> None:
        """The slot held under ``old`` (a submit's token) is now the task ``new``'s."""

    def release(self, key_id: str, slot: str) -> None:
        """``slot`` no longer counts (its task is final, or its submit failed)."""

    def mark_busy(self, key_id: str, until: float) -> None:
        """The key was refused for its request rate: threadsinfo says busy until ``until``."""


class DynamoDbKeyThreads:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def read(self, key_id: str) -> ThreadSlots:
        answer = dynamodb_call(
            "GetItem",
            self._client.get_item,
            TableName=self._table,
            Key=_key(key_id),
            ConsistentRead=True,
        )
        return _slots_of(answer.get("Item") or {})

    def take(self, key_id: str, slot: str, until: float, now: float, threads: int) -> bool:
        for _ in range(WRITE_ATTEMPTS):
            held = self.read(key_id)
            live = held.live(now)
            if len(live) >= threads:
                return False
            if self._write_slot(key_id, held, live, slot, until):
                return True
        return False

    def _write_slot(
        self, key_id: str, held: ThreadSlots, live: Mapping[str, float], slot: str, until: float
    ) -> bool:
        """One conditional write: the slot added, expired ones dropped, if nobody wrote since."""
        kept = {**live, slot: until}
        expires = int(max(kept.values()) + 1)
        try:
            dynamodb_call(
                "UpdateItem",
                self._client.update_item,
                TableName=self._table,
                Key=_key(key_id),
                UpdateExpression="SET slots = :slots, version = :next, expires_at = :expires",
                ConditionExpression="attribute_not_exists(version) OR version = :version",
                ExpressionAttributeValues={
                    ":slots": {"M": {name: {"N": repr(value)} for name, value in kept.items()}},
                    ":next": {"N": str(held.version + 1)},
                    ":version": {"N": str(held.version)},
                    ":expires": {"N": str(expires)},
                },
            )
        except ConditionRefused:
            return False
        return True

    def rename(self, key_id: str, old: str, new: str, until: float) -> None:
        dynamodb_call(
            "UpdateItem",
            self._client.update_item,
            TableName=self._table,
            Key=_key(key_id),
            UpdateExpression="SET slots.#new = :until REMOVE slots.#old",
            ConditionExpression="attribute_exists(slots)",
            ExpressionAttributeNames={"#new": new, "#old": old},
            ExpressionAttributeValues={":until": {"N": repr(until)}},
        )

    def release(self, key_id: str, slot: str) -> None:
        try:
            dynamodb_call(
                "UpdateItem",
                self._client.update_item,
                TableName=self._table,
                Key=_key(key_id),
                UpdateExpression="REMOVE slots.#slot",
                ConditionExpression="attribute_exists(slots.#slot)",
                ExpressionAttributeNames={"#slot": slot},
            )
        except ConditionRefused:
            return

    def mark_busy(self, key_id: str, until: float) -> None:
        dynamodb_call(
            "UpdateItem",
            self._client.update_item,
            TableName=self._table,
            Key=_key(key_id),
            UpdateExpression="SET busy_until = :until,"
            " expires_at = if_not_exists(expires_at, :expires)",
            ExpressionAttributeValues={
                ":until": {"N": repr(until)},
                ":expires": {"N": str(int(until) + 1)},
            },
        )


def _key(key_id: str) -> dict[str, Any]:
    return {"id": {"S": f"{THREADS_PREFIX}{key_id}"}}


def _slots_of(item: Mapping[str, Any]) -> ThreadSlots:
    slots = item.get("slots", {}).get("M", {})
    return ThreadSlots(
        slots={name: float(value.get("N", "0")) for name, value in slots.items()},
        busy_until=float(item.get("busy_until", {}).get("N", "0")),
        version=int(item.get("version", {}).get("N", "0")),
    )
