"""Push delivery: a final result goes to the WebSocket connections of the task's owner.

An accelerator, never the record: the table stays the truth (GET /tasks/{id}), and what is pushed
is the same view a GET answers: the result event's own when it says it all (a failed or expired
task), else read from the table when the event arrives, in one request with the owner's
connections (the event names the owner). A subscribe is one read too. A connection
belongs to the IAM principal API Gateway verified on $connect; only that principal's results
(and only its own tasks' current state, on subscribe) are ever sent to it. A worker that
(re)connects subscribes to the tasks it waits for and gets their current state: what was pushed
while it was away is not lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pingback_guard.data.connections import Connection, ConnectionStore, TooManyConnections
from pingback_guard.data.push_reads import PushReads
from pingback_guard.domain.bounded_json import InvalidJsonError, parse_json
from pingback_guard.domain.errors import ConnectionGoneError, PushError
from pingback_guard.domain.task import TaskStatus, normalise_task_id
from pingback_guard.logic.access import may_access
from pingback_guard.logic.get_task import worker_view

MAX_SUBSCRIBED_IDS = 50
MAX_SUBSCRIPTION_BYTES = 4096
# API Gateway WebSocket quotas: a message (an @connections post too) of more than 32 KB must be
# split into frames of at most 32 KB, and a message carries at most 128 KB; a larger one closes
# the connection (1009) or is refused. A subscribe answer of 50 solved tokens reached 238 KB, so
# it is sent as several messages, each of whole views, each within one frame. One view alone is
# always under 128 KB (an 8 KB answer, twice, even escaped).
# https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-execution-service-websocket-limits-table.html
MAX_MESSAGE_BYTES = 32 * 1024
FINAL_STATUSES = frozenset(
    status.value for status in TaskStatus if status is not TaskStatus.PENDING
)


class InvalidSubscription(ValueError):
    """A subscribe message that is not {"action": "subscribe", "task_ids": [up to 50 ids]}."""


class Posted(StrEnum):
    SENT = "sent"
    GONE = "gone"  # API Gateway says the connection is closed: it is forgotten
    FAILED = "failed"


@dataclass
class PushReport:
    """What one invocation did; each count is also a metric the handler emits."""

    sent: int = 0
    gone: int = 0
    failed: int = 0
    no_connection: int = 0
    # A subscribe answer the Management API refused: the caller's own request, never alarmed
    # (any principal could otherwise fire the push-failed alarm at will).
    answer_failed: int = 0

    def record(self, posted: Posted, *, answering: bool = False) -> None:
        if posted is Posted.SENT:
            self.sent += 1
        elif posted is Posted.GONE:
            self.gone += 1
        elif answering:
            self.answer_failed += 1
        else:
            self.failed += 1


@dataclass(frozen=True)
class ResultEvent:
    """A final result as its event carries it: the task, whose it is (None: nobody's, nothing
    to push), and the view to push when the event says it all (None: the table's)."""

    task_id: str
    owner: str | None
    view: dict[str, Any] | None = None


def result_of_event(task_id: str, detail: Mapping[str, Any]) -> ResultEvent:
    """From a result event's detail (the table's stream image: every value a string, "" where
    the item had none). The view a GET would answer of a task that failed or expired is all in
    it; a solved task's is not (its answer parsed for its kind, and whether that kind's answers
    have a lifetime, need the task's request, and the token is published only on request)."""
    owner, status = (str(detail.get(key) or "") for key in ("owner", "status"))
    if not owner:
        return ResultEvent(task_id, None)
    if status not in FINAL_STATUSES or status == TaskStatus.SOLVED:
        return ResultEvent(task_id, owner)
    view = {
        "task_id": task_id,
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
    return ResultEvent(task_id, owner, view)


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
        connections: ConnectionStore,
        reads: PushReads,
        send: Callable[[str, bytes], None],
        *,
        connection_ttl_seconds: float,
        max_connections_per_owner: int,
    ) -> None:
        self._connections = connections
        self._reads = reads
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
        (unknown, foreign and PENDING ids are left out alike; nothing final: no message), in
        as many messages as the frame limit needs."""
        found = self._reads.subscription(connection_id, task_ids)
        if found.owner is None:
            return PushReport(no_connection=1)
        owner = found.owner
        views = [
            worker_view(task, now)
            for task in found.tasks
            if task.status is not TaskStatus.PENDING and may_access(task, owner)
        ]
        report = PushReport()
        for message in subscribe_answers(views):
            posted = self._post(connection_id, message)
            report.record(posted, answering=True)
            if posted is Posted.GONE:
                self._connections.remove(connection_id)
                break
        return report

    def deliver(self, event: ResultEvent, now: float) -> PushReport:
        """Push the task's final view to each connection of its owner: the event's view when
        it says it all (the connections read alone), else the table's (read with them)."""
        if event.owner is None:
            return PushReport()
        if event.view is not None:
            view, connections = event.view, self._connections.of_owner(event.owner, now)
        else:
            found = self._reads.result_for_push(event.task_id, event.owner, now)
            task = found.task
            # The event's owner is whose connections were read: a task owned otherwise by now
            # (its stack submit replaced a registration) gets its own event.
            if task is None or task.status is TaskStatus.PENDING or task.owner != event.owner:
                return PushReport()
            view, connections = worker_view(task, now), found.connections
        report = PushReport(no_connection=0 if connections else 1)
        message = encode({"type": "task", "task": view})
        for connection in connections:
            posted = self._post(connection.connection_id, message)
            report.record(posted)
            if posted is Posted.GONE:
                self._connections.drop(connection)
        return report

    def _post(self, connection_id: str, message: bytes) -> Posted:
        try:
            self._send(connection_id, message)
        except ConnectionGoneError:
            return Posted.GONE
        except PushError:
            return Posted.FAILED
        return Posted.SENT


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message).encode()


TASKS_OPENING, TASKS_SEPARATOR, TASKS_CLOSING = b'{"type": "tasks", "tasks": [', b", ", b"]}"


def subscribe_answers(views: Sequence[dict[str, Any]]) -> list[bytes]:
    """The views as {"type": "tasks", "tasks": [...]} messages of whole views (json.dumps's own
    text), each at most MAX_MESSAGE_BYTES (a view larger alone goes alone); none for no view."""
    wrapping = len(TASKS_OPENING) + len(TASKS_CLOSING)
    messages: list[bytes] = []
    batch: list[bytes] = []
    size = wrapping
    for view in views:
        part = encode(view)
        added = len(part) + (len(TASKS_SEPARATOR) if batch else 0)
        if batch and size + added > MAX_MESSAGE_BYTES:
            messages.append(TASKS_OPENING + TASKS_SEPARATOR.join(batch) + TASKS_CLOSING)
            batch, size, added = [], wrapping, len(part)
        batch.append(part)
        size += added
    if batch:
        messages.append(TASKS_OPENING + TASKS_SEPARATOR.join(batch) + TASKS_CLOSING)
    return messages
