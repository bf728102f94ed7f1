"""Accounting of the AWS calls the functions make, reported by the workers' botocore hooks.

A record holds names only: function, service, operation, outcome, table, the `task_id` key
values and the expression texts. Never attribute values: they carry tokens.
"""

import threading
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

OUTCOME_OK = "ok"
_KEPT_RECORDS = 500_000


@dataclass(frozen=True)
class AwsCall:
    function: str
    service: str
    operation: str
    outcome: str
    """"ok", or the error code / exception name the function saw."""
    time: float
    duration_ms: float
    request_id: str | None = None
    """The invocation that made the call; None during a cold start."""
    injected: str | None = None
    """The fault mode that produced the outcome, if a fault rule did."""
    table: str | None = None
    task_ids: tuple[str, ...] = ()
    update_expression: str | None = None
    condition_expression: str | None = None
    answered: bool = True
    """Whether AWS answered at all (an error answer included): False when no answer came."""
    scanned_count: int | None = None
    """The items a Query or Scan answer says it read."""

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> "AwsCall":
        fields = {name: document[name] for name in cls.__dataclass_fields__ if name in document}
        fields["task_ids"] = tuple(document.get("task_ids", ()))
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["task_ids"] = list(self.task_ids)
        return document


@dataclass(frozen=True)
class NumberedCall:
    sequence: int
    call: AwsCall

    def to_json(self) -> dict[str, Any]:
        return {"sequence": self.sequence, **self.call.to_json()}


@dataclass
class CallLog:
    """Every reported call (the latest 500k kept) and exact counts per kind of call."""

    _records: deque[NumberedCall] = field(default_factory=lambda: deque(maxlen=_KEPT_RECORDS))
    _counts: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    _next_sequence: int = 1
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, call: AwsCall) -> None:
        with self._lock:
            self._records.append(NumberedCall(self._next_sequence, call))
            self._next_sequence += 1
            self._counts[(call.function, call.service, call.operation, call.outcome)] += 1

    def since(self, sequence: int = 0) -> list[NumberedCall]:
        """The kept records numbered above `sequence`."""
        with self._lock:
            return [record for record in self._records if record.sequence > sequence]

    def counts(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {
                    "function": function,
                    "service": service,
                    "operation": operation,
                    "outcome": outcome,
                    "count": count,
                }
                for (function, service, operation, outcome), count in sorted(self._counts.items())
            ]

    def reset(self) -> None:
        with self._lock:
            self._records.clear()
            self._counts.clear()

    def report(self, since: int = 0) -> dict[str, Any]:
        """The shape served by GET /_local/calls."""
        records = self.since(since)
        return {
            "counts": self.counts(),
            "calls": [record.to_json() for record in records],
            "last_sequence": records[-1].sequence if records else since,
        }
