"""AWS calls of labelled windows of work, as the local stack's botocore hooks report them."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from infra.local.runtime.aws_hooks import AwsCallHooks
from infra.local.runtime.calls import AwsCall

DYNAMODB = "dynamodb"
TABLE_READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})
TABLE_WRITE_OPERATIONS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)


@dataclass
class CallTally:
    """What one labelled window of work sent to AWS."""

    calls: list[AwsCall] = field(default_factory=list)

    def count(
        self, service: str, operations: frozenset[str] | None = None, answered: bool = False
    ) -> int:
        """Calls to `service` (those `operations` only), or only those AWS answered."""
        return sum(
            1
            for call in self.calls
            if call.service == service
            and (operations is None or call.operation in operations)
            and (call.answered or not answered)
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
    def scanned_counts(self) -> list[int]:
        """Items each Query and Scan answer read."""
        return [call.scanned_count for call in self.calls if call.scanned_count is not None]

    def by_kind(self, answered: bool | None = None) -> Counter[str]:
        """'service.Operation' -> calls (None: all, else only those answered or not)."""
        return Counter(
            f"{call.service}.{call.operation}"
            for call in self.calls
            if answered is None or call.answered == answered
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": dict(sorted(self.by_kind().items())),
            "unanswered": dict(sorted(self.by_kind(answered=False).items())),
            "items_scanned": sum(self.scanned_counts),
        }


class CallWindows:
    """Tallies the calls its hooks report, only inside a `window(label)`."""

    def __init__(self) -> None:
        self.tallies: dict[str, CallTally] = {}
        self.hooks = AwsCallHooks("bench", self._record)
        self._lock = threading.Lock()
        self._label: str | None = None

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

    def _record(self, call: AwsCall) -> None:
        with self._lock:
            if self._label is not None:
                self.tallies[self._label].calls.append(call)
