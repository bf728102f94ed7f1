"""Tasks the simulated provider accepted, and the registry that holds them."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from typing import Any

from infra.simulator.answers import Solution


class TaskState(enum.Enum):
    """What res.php can say about a task at a given moment."""

    SOLVING = "solving"
    SOLVED = "solved"
    FAILED = "failed"
    FORGOTTEN = "forgotten"


@dataclass(frozen=True)
class DeliveryAttempt:
    """One pingback decision: an HTTP status code, or what prevented a response.

    Non-numeric outcomes: `dropped` (fault, never sent), `refused` (connection refused),
    `timeout`, `error` (any other transport failure), `refused_non_loopback` (not sent because
    the host is not this machine).
    """

    at: float
    method: str
    outcome: int | str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "method": self.method, "outcome": self.outcome}


@dataclass
class Task:
    """One accepted task. Its fate (outcome, answer, finish time) is decided at submit; it
    starts when it gets a thread of the plan (later than its submit when it was queued)."""

    task_id: str
    account: int
    method: str
    submitted_at: float
    started_at: float
    finishes_at: float
    retained_until: float
    reportable_until: float
    solved: bool
    solution: Solution
    pingback_url: str | None
    pingback_method: str
    deliveries: list[DeliveryAttempt] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)

    @property
    def code(self) -> str:
        """The answer text (or ERROR_CAPTCHA_UNSOLVABLE), as res.php and the pingback carry it."""
        return self.solution.text

    def state(self, now: float) -> TaskState:
        if now < self.finishes_at:
            return TaskState.SOLVING
        if now >= self.retained_until:
            return TaskState.FORGOTTEN
        return TaskState.SOLVED if self.solved else TaskState.FAILED

    def accepts_report(self, now: float) -> bool:
        return self.solved and self.finishes_at <= now < self.reportable_until

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "account": self.account,
            "method": self.method,
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "finished_at": self.finishes_at,
            "finished": now >= self.finishes_at,
            "retrievable_until": self.retained_until,
            "reportable_until": self.reportable_until,
            "outcome": "solved" if self.solved else "failed",
            "code": self.code,
            "answer_field": self.solution.field,
            "user_agent": self.solution.user_agent,
            "pingback_url": self.pingback_url,
            "pingback_method": self.pingback_method,
            "deliveries": [attempt.to_json() for attempt in self.deliveries],
            "reports": list(self.reports),
        }


class TaskRegistry:
    """Every task of a run, kept for the whole run so the truth can be read at the end."""

    def __init__(self, first_id: int) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, Task] = {}
        self._last_id = first_id

    def allocate_id(self, gap: int) -> str:
        """A new id `gap` above the previous one: ids grow like the provider's, never repeat."""
        with self._lock:
            self._last_id += gap
            return str(self._last_id)

    def add(self, task: Task) -> None:
        with self._lock:
            self._tasks[task.task_id] = task

    def get(self, task_id: str) -> Task | None:
        with self._lock:
            return self._tasks.get(task_id)

    def record_delivery(self, task_id: str, attempt: DeliveryAttempt) -> None:
        with self._lock:
            self._tasks[task_id].deliveries.append(attempt)

    def record_report(self, task_id: str, kind: str, now: float) -> bool:
        """Stores a reportbad/reportgood; False when the task cannot be reported (any more)."""
        with self._lock:
            task = self._tasks[task_id]
            if not task.accepts_report(now):
                return False
            task.reports.append(kind)
            return True

    def task_ids(self) -> list[str]:
        with self._lock:
            return list(self._tasks)

    def to_json(self, now: float) -> list[dict[str, Any]]:
        with self._lock:
            return [task.to_json(now) for task in self._tasks.values()]
