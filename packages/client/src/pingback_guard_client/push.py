"""Push: final results arrive over the stack's WebSocket API (output `WebSocketUrl`).

An accelerator only: GET /tasks/{id} stays the source of truth, and while the connection is down
wait() falls back to paced GETs. One background thread holds one connection per client, signed
with SigV4 on its `$connect` (IAM). The stack pushes every final result of the connecting
principal's tasks to each of its connections; on every (re)connect the channel subscribes to the
tasks it is waiting for and the stack answers with their current state, so a result pushed while
the connection was down is not missed. Needs the optional `websockets` package
(`pip install "pingback-guard-client[push]"`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from botocore.credentials import Credentials
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from pingback_guard_client.models import TaskView
from pingback_guard_client.signing import signed_headers

logger = logging.getLogger(__name__)

SUBSCRIBE_BATCH = 50
RECENT_RESULTS_KEPT = 10_000
_RECONNECT_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0)
FORBIDDEN = 403
# API Gateway answers 403 at $connect when the caller's IAM policy does not allow
# execute-api:Invoke on the route (IAM authorization of a WebSocket API's $connect):
# https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-websocket-control-access-iam.html
REFUSED_AT_CONNECT = (
    "push refused at $connect (HTTP 403): this identity's IAM policy lacks execute-api:Invoke on"
    " arn:aws:execute-api:<region>:<account>:<api-id>/<stage>/$connect; waiting by paced GETs"
    " until it is granted"
)


class PushChannel:
    """One WebSocket connection to the stack, kept open and reopened in a background thread."""

    def __init__(
        self,
        url: str,
        region: str,
        credentials: Credentials | None = None,
        *,
        connect_timeout: float = 5.0,
        connector: Callable[..., ClientConnection] = connect,
    ) -> None:
        self._url = url
        self._connector = connector
        self.refused: str | None = None
        """Why the stack refuses this client's connection (403 at $connect: a missing IAM
        grant), None while it does not: wait() falls back to paced GETs meanwhile."""
        self._region = region
        self._credentials = credentials
        self._connect_timeout = connect_timeout
        self._changed = threading.Condition()
        self._closed = threading.Event()
        self._connection: ClientConnection | None = None
        self._attempted = threading.Event()
        self._watched: dict[str, int] = {}
        # When the connection came up, and when this client submitted each task (monotonic):
        # a task submitted while the connection was already up needs no subscribe.
        self._up_since: float | None = None
        self._submitted: OrderedDict[str, float] = OrderedDict()
        self._final: OrderedDict[str, TaskView] = OrderedDict()
        self._async_waiters: dict[str, list[asyncio.Future[TaskView]]] = {}
        self._thread: threading.Thread | None = None

    @property
    def connected(self) -> bool:
        return self._connection is not None

    def start(self) -> None:
        """Connect in the background; waits for the first attempt (at most connect_timeout)."""
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="pingback-guard-push", daemon=True
                )
                self._thread.start()
        self._attempted.wait(self._connect_timeout)

    def close(self) -> None:
        self._closed.set()
        connection = self._connection
        if connection is not None:
            connection.close()
        if self._thread is not None:
            self._thread.join(self._connect_timeout + 1)

    def submitted(self, task_id: str) -> None:
        """This client submitted the task just now: while the connection stays up, its result
        will be pushed without asking."""
        with self._changed:
            self._submitted[task_id] = time.monotonic()
            while len(self._submitted) > RECENT_RESULTS_KEPT:
                self._submitted.popitem(last=False)

    def watch(self, task_id: str) -> None:
        """Wait for this task: its state is asked for on every (re)connect, and now unless the
        connection has been up since before it was submitted (then its push will come)."""
        with self._changed:
            self._watched[task_id] = self._watched.get(task_id, 0) + 1
            connection, up_since = self._connection, self._up_since
            submitted_at = self._submitted.pop(task_id, None)
        covered = up_since is not None and submitted_at is not None and submitted_at >= up_since
        if connection is not None and not covered:
            self._subscribe(connection, [task_id])

    def unwatch(self, task_id: str) -> None:
        with self._changed:
            left = self._watched.get(task_id, 0) - 1
            if left > 0:
                self._watched[task_id] = left
            else:
                self._watched.pop(task_id, None)

    def wait(self, task_id: str, timeout: float) -> TaskView | None:
        """The task's final view once pushed; None at timeout or when the connection changes
        (up or down: the caller's pacing changes with it)."""
        with self._changed:
            was_connected = self.connected
            self._changed.wait_for(
                lambda: task_id in self._final or self.connected != was_connected, timeout
            )
            return self._final.get(task_id)

    async def wait_async(self, task_id: str, timeout: float) -> TaskView | None:
        """wait() for the event loop: no thread is held while waiting."""
        future: asyncio.Future[TaskView] = asyncio.get_running_loop().create_future()
        with self._changed:
            if task_id in self._final:
                return self._final[task_id]
            self._async_waiters.setdefault(task_id, []).append(future)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
        finally:
            with self._changed:
                waiters = self._async_waiters.get(task_id, [])
                if future in waiters:
                    waiters.remove(future)
                if not waiters:
                    self._async_waiters.pop(task_id, None)

    def _run(self) -> None:
        failures = 0
        while not self._closed.is_set():
            try:
                with self._connector(
                    self._url,
                    additional_headers=signed_headers(self._url, self._region, self._credentials),
                    open_timeout=self._connect_timeout,
                ) as connection:
                    failures = 0
                    self.refused = None
                    self._serve(connection)
            except InvalidStatus as error:
                self._refused(error.response.status_code)
            except (OSError, WebSocketException, TimeoutError) as error:
                logger.info("push connection unavailable: %s", type(error).__name__)
            finally:
                self._set_connection(None)
                self._attempted.set()
            longest = len(_RECONNECT_SECONDS) - 1
            pause = _RECONNECT_SECONDS[longest if self.refused else min(failures, longest)]
            failures += 1
            self._closed.wait(pause)

    def _refused(self, status: int) -> None:
        """Said once (a warning, and ``refused``) while the refusal lasts: a 403 does not go
        away by retrying, and the retries stay at the longest pause."""
        if status != FORBIDDEN:
            logger.info("push connection refused: HTTP %s", status)
            return
        if self.refused is None:
            self.refused = REFUSED_AT_CONNECT
            logger.warning(REFUSED_AT_CONNECT)

    def _serve(self, connection: ClientConnection) -> None:
        self._set_connection(connection)
        self._attempted.set()
        with self._changed:
            watched = list(self._watched)
        self._subscribe(connection, watched)
        for message in connection:
            self._receive(message)

    def _set_connection(self, connection: ClientConnection | None) -> None:
        with self._changed:
            self._connection = connection
            self._up_since = None if connection is None else time.monotonic()
            self._changed.notify_all()

    def _subscribe(self, connection: ClientConnection, task_ids: Iterable[str]) -> None:
        ids = list(task_ids)
        for start in range(0, len(ids), SUBSCRIBE_BATCH):
            document = {"action": "subscribe", "task_ids": ids[start : start + SUBSCRIBE_BATCH]}
            with contextlib.suppress(WebSocketException, OSError):
                connection.send(json.dumps(document))

    def _receive(self, message: str | bytes) -> None:
        try:
            document = json.loads(message)
            views = [_task_view(found) for found in _tasks_of(document)]
        except (ValueError, KeyError, TypeError):
            logger.warning("push message not understood; ignored")
            return
        for view in views:
            if view.is_final:
                self._settle(view)

    def _settle(self, view: TaskView) -> None:
        with self._changed:
            self._final[view.task_id] = view
            self._final.move_to_end(view.task_id)
            while len(self._final) > RECENT_RESULTS_KEPT:
                self._final.popitem(last=False)
            waiters = self._async_waiters.pop(view.task_id, [])
            self._changed.notify_all()
        for future in waiters:
            future.get_loop().call_soon_threadsafe(_resolve, future, view)


def _tasks_of(document: Any) -> list[Any]:
    if document.get("type") == "task":
        return [document["task"]]
    if document.get("type") == "tasks":
        return list(document["tasks"])
    return []


def _task_view(found: Any) -> TaskView:
    if not isinstance(found, dict):
        raise TypeError("a task view is an object")
    return TaskView.from_json(found)


def _resolve(future: asyncio.Future[TaskView], view: TaskView) -> None:
    if not future.done():
        future.set_result(view)
