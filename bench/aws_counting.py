"""Counts AWS API calls at the boto3 layer through botocore's event hooks.

A call is counted once however many times botocore retries it; `answered` says whether AWS (here
moto) sent an answer at all, error answers included: DynamoDB bills a refused conditional write,
but not a request that never reached it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.hooks import BaseEventHooks

DYNAMODB = "dynamodb"
TABLE_READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})
TABLE_WRITE_OPERATIONS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)


@dataclass
class CallTally:
    """What one labelled window of work sent to AWS."""

    calls: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    items_scanned: int = 0
    items_returned: int = 0
    pages: list[tuple[int, int]] = field(default_factory=list)
    """(ScannedCount, Count) of every Query and Scan answer."""

    def count(self, service: str, operations: frozenset[str] | None = None) -> int:
        return sum(
            number
            for key, number in self.calls.items()
            if _service_of(key) == service
            and (operations is None or _operation_of(key) in operations)
        )

    @property
    def table_reads(self) -> int:
        return self.count(DYNAMODB, TABLE_READ_OPERATIONS)

    @property
    def table_writes(self) -> int:
        return self.count(DYNAMODB, TABLE_WRITE_OPERATIONS)

    @property
    def table_queries(self) -> int:
        return self.count(DYNAMODB, frozenset({"Query"}))

    @property
    def unanswered(self) -> Counter[str]:
        return self.calls - self.answered

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": dict(sorted(self.calls.items())),
            "unanswered": dict(sorted(self.unanswered.items())),
            "items_scanned": self.items_scanned,
            "items_returned": self.items_returned,
        }


class AwsCallCounter:
    """Attach to an event emitter; calls are tallied only inside a `window(label)`."""

    def __init__(self) -> None:
        self.tallies: dict[str, CallTally] = {}
        self._lock = threading.Lock()
        self._label: str | None = None

    def attach(self, events: BaseEventHooks) -> None:
        """Attach before clients are created from a session: they copy its hooks."""
        events.register("before-call", self._on_call)
        events.register("after-call", self._on_answer)

    @contextmanager
    def window(self, label: str) -> Iterator[CallTally]:
        with self._lock:
            tally = self.tallies.setdefault(label, CallTally())
            previous, self._label = self._label, label
        try:
            yield tally
        finally:
            with self._lock:
                self._label = previous

    def _on_call(self, event_name: str, **_: Any) -> None:
        with self._lock:
            if self._label is not None:
                self.tallies[self._label].calls[_call_key(event_name)] += 1

    def _on_answer(self, event_name: str, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            if self._label is None:
                return
            tally = self.tallies[self._label]
            tally.answered[_call_key(event_name)] += 1
            if "ScannedCount" in parsed:
                page = (int(parsed["ScannedCount"]), int(parsed.get("Count", 0)))
                tally.pages.append(page)
                tally.items_scanned += page[0]
                tally.items_returned += page[1]


def _call_key(event_name: str) -> str:
    """'before-call.dynamodb.UpdateItem' -> 'dynamodb.UpdateItem'."""
    return event_name.split(".", 1)[1]


def _service_of(key: str) -> str:
    return key.split(".", 1)[0]


def _operation_of(key: str) -> str:
    return key.rsplit(".", 1)[-1]
