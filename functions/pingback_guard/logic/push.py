"""Push delivery: a final result goes to the WebSocket connections of the task's owner.

An accelerator, never the record: the table stays the truth (GET /tasks/{id}), and what is pushed
is the same view a GET answers, read from the table when the result event arrives. A connection
belongs to the IAM principal API Gateway verified on $connect; only that principal's results
(and only its own tasks' current state, on subscribe) are ever sent to it. A worker that
(re)connects subscribes to the tasks it waits for and gets their current state: what was pushed
while it was away is not lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pingback_guard.data.connections import Connection, ConnectionStore, TooManyConnections
from pingback_guard.data.store import TaskStore
from pingback_guard.domain.bounded_json import InvalidJsonError, parse_json
from pingback_guard.domain.errors import ConnectionGoneError, PushError
from pingback_guard.domain.task import TaskStatus, normalise_task_id
from pingback_guard.logic.access import may_access
from pingback_guard.logic.get_task import worker_view

MAX_SUBSCRIBED_IDS = 50
MAX_SUBSCRIPTION_BYTES = 4096
FINAL_STATUSES = frozenset(
    status.value for status in TaskStatus if status is not TaskStatus.PENDING
)


class InvalidSubscription(ValueError):
    """A subscribe message that is not {"action": "subscribe", "task_ids": [up to 50 ids]}."""


@dataclass
class PushReport:
    """What one invocation did; each count is also a metric the handler emits."""

    sent: int = 0
    gone: int = 0
    failed: int = 0
    no_connection: int = 0


@dataclass(frozen=True)
class PushedResult:
    """A final result as its event carries it: whose it is, and the view to push."""

    owner: str
    view: dict[str, Any]


def result_of_event(detail: Mapping[str, Any]) -> PushedResult | None:
    """The view a GET would answer of a task that failed or expired, from a result event's
    detail (the table's stream image: every value a string, "" where the item had none); None
    when the event cannot say it all: no owner, or a solved task (its answer parsed for its kind,
    and whether that kind's answers have a lifetime, need the task's request, which no event
    carries): then the table is read."""
    owner, status = (str(detail.get(key) or "") for key in ("owner", "status"))
    if not owner or status not in FINAL_STATUSES or status == TaskStatus.SOLVED:
        return None
    view = {
        "task_id": str(detail.get("task_id")),
        "status": status,
        "solution": None,
        "error": str(detail.get("error") or "") or None,
        "delivered_via": str(detail.get("delivered_via") or "") or None,
        "finished_at_earliest": _number(detail.get("finished_at_earliest")),
        "finished_at_latest": _number(detail.get("finished_at_latest")),
        "usable_until": None,
        "usable": False,
        "token_age_seconds": None,
    }
    return PushedResult(owner, view)


def _number(value: object) -> float | None:
    try:
        return float(str(value)) if value not in (None, "") else None
    except ValueError:
        return None


def parse_subscription(body: str | None) -> list[str]:
    try:
        document = parse_json(body or "", MAX_SUBSCRIPTION_BYTES)
    except InvalidJsonError as error:
        raise InvalidSubscription(str(error)) from None
    ids = document.get("task_ids") if isinstance(document, dict) else None
    if not isinstance(ids, list) or not 0 < len(ids) <= MAX_SUBSCRIBED_IDS:
        raise InvalidSubscription(f"task_ids must be a list of 1 to {MAX_SUBSCRIBED_IDS} ids")
    try:
        return list(dict.fromkeys(normalise_task_id(task_id) for task_id in ids))
    except ValueError as error:
        raise InvalidSubscription(str(error)) from None


class PushService:
    def __init__(
        self,
        tasks: TaskStore,
        connections: ConnectionStore,
        send: Callable[[str, bytes], None],
        *,
        connection_ttl_seconds: float,
        max_connections_per_owner: int,
    ) -> None:
        self._tasks = tasks
        self._connections = connections
        self._send = send
        self._ttl = connection_ttl_seconds
        self._max_per_owner = max_connections_per_owner

    def connect(self, connection_id: str, owner: str, now: float) -> bool:
        """Record the connection; False when its owner already holds the most allowed."""
        try:
            connection = Connection(connection_id, owner, now + self._ttl)
            self._connections.add(connection, self._max_per_owner)
        except TooManyConnections:
            return False
        return True

    def disconnect(self, connection_id: str) -> None:
        self._connections.remove(connection_id)

    def subscribe(self, connection_id: str, task_ids: Sequence[str], now: float) -> PushReport:
        """Answer the connection with those of ``task_ids`` its owner owns that are final
        (unknown, foreign and PENDING ids are left out alike; nothing final: no message)."""
        owner = self._connections.owner_of(connection_id)
        if owner is None:
            return PushReport(no_connection=1)
        views = []
        for task_id in task_ids:
            task = self._tasks.get(task_id)
            if (
                task is not None
                and task.status is not TaskStatus.PENDING
                and may_access(task, owner)
            ):
                views.append(worker_view(task, now))
        report = PushReport()
        if not views:
            return report
        if self._post(connection_id, {"type": "tasks", "tasks": views}, report):
            self._connections.remove(connection_id)
        return report

    def deliver(self, task_id: str, now: float, event: PushedResult | None = None) -> PushReport:
        """Push the task's final view to each connection of its owner: the event's when it
        says it all, else the table's."""
        if event is None:
            task = self._tasks.get(task_id)
            if task is None or task.status is TaskStatus.PENDING or task.owner is None:
                return PushReport()
            event = PushedResult(task.owner, worker_view(task, now))
        connections = self._connections.of_owner(event.owner, now)
        report = PushReport(no_connection=0 if connections else 1)
        message = {"type": "task", "task": event.view}
        for connection in connections:
            if self._post(connection.connection_id, message, report):
                self._connections.drop(connection)
        return report

    def _post(self, connection_id: str, message: dict[str, Any], report: PushReport) -> bool:
        """Send one message; True when API Gateway says the connection is gone."""
        try:
            self._send(connection_id, json.dumps(message).encode())
        except ConnectionGoneError:
            report.gone += 1
            return True
        except PushError:
            report.failed += 1
        else:
            report.sent += 1
        return False
