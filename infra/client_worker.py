"""A simulated worker, for the freshness benchmark and the chaos run: the worker client
(`pingback_guard_client`) submits with POST /tasks and waits with its `wait()` (a GET about once a
second; the stack checks res.php itself for an overdue task). The transport counts the GETs each
task cost."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from infra.local.apigateway.signing import credentials_of, local_signed_session
from infra.local.runtime.aws import WORKER
from pingback_guard_client import (
    ApiError,
    Client,
    Pacing,
    PingbackGuardError,
    ServiceUnavailable,
    TokenUnusable,
)
from pingback_guard_client.push import PushChannel
from pingback_guard_client.transport import HttpAnswer, RequestsTransport, Transport

GET_PERIOD_SECONDS = 1.0
REQUEST_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Waited:
    """The task's view when the worker stopped waiting, and when that was."""

    view: dict[str, Any]
    had_at: float
    gets: int


class CountingTransport:
    """GETs per path, so each task's waiting cost is known, and the paths a GET found final."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.gets: Counter[str] = Counter()
        self.final_by_get: set[str] = set()

    def request(self, method: str, path: str, body: Mapping[str, Any] | None) -> HttpAnswer:
        if method == "GET":
            with self._lock:
                self.gets[path] += 1
        answer = self._inner.request(method, path, body)
        status = answer.body.get("status") if isinstance(answer.body, dict) else None
        if method == "GET" and answer.status == 200 and status not in {None, "PENDING"}:
            with self._lock:
                self.final_by_get.add(path)
        return answer

    def close(self) -> None:
        self._inner.close()


class WaitMode(StrEnum):
    """How the worker waits (issue 24's three ways, side by side in the bench)."""

    EVERY_SECOND = "every_second"
    """GET about once a second, whatever the stack says (the client before pacing)."""
    PACED = "paced"
    """GET when POST /tasks and each PENDING GET say a look is worthwhile."""
    PUSH = "push"
    """Results pushed over the WebSocket API; paced GETs only while push is down."""


class ClientWaiter:
    """A worker using the client library, signed as the local stack's worker principal."""

    def __init__(
        self,
        api_url: str,
        region: str,
        mode: WaitMode = WaitMode.EVERY_SECOND,
        push_url: str | None = None,
    ) -> None:
        self._transport = CountingTransport(
            RequestsTransport(api_url, local_signed_session(region), REQUEST_TIMEOUT_SECONDS)
        )
        if mode is WaitMode.PUSH and push_url is None:
            raise ValueError("push needs the stack's WebSocket URL")
        self._client = Client(
            api_url,
            region,
            credentials=credentials_of(WORKER),
            transport=self._transport,
            pacing=Pacing(
                interval=GET_PERIOD_SECONDS, follow_hints=mode is not WaitMode.EVERY_SECOND
            ),
            push_url=push_url if mode is WaitMode.PUSH else None,
        )
        self._look_after: dict[str, float | None] = {}

    @property
    def push(self) -> PushChannel | None:
        return self._client.push

    def submit(self, request: dict[str, Any]) -> str:
        extras = request.get("extras", {})
        task_id, look_after = self._client.submit_paced(
            request["method"], request["sitekey"], request["page_url"], **extras
        )
        self._look_after[task_id] = look_after
        return task_id

    def wait(self, task_id: str, timeout: float) -> Waited:
        # Unsolvable, unusable or timed out: the view read below says which.
        with contextlib.suppress(PingbackGuardError):
            self._client.wait(task_id, timeout, self._look_after.pop(task_id, None))
        had_at = time.time()
        gets = self._transport.gets[f"/tasks/{task_id}"]
        view = asdict(self._client.task(task_id))  # read after the fact, not counted
        return Waited(view, had_at, gets)

    def found_final_by_get(self, task_id: str) -> bool:
        """Did a GET of this worker's find the task final (with push: the fallback, not the
        push, brought the result)? Ask before any after-the-fact read of the task."""
        return f"/tasks/{task_id}" in self._transport.final_by_get

    def had_token_at(self, task_id: str, timeout: float) -> float | None:
        """When this worker had the task's token in hand (None: unsolvable, or not within
        `timeout`), waiting out the stack's outages and a task not recorded yet (404 until the
        replay of its registration)."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                self._client.wait(task_id, remaining)
                return time.time()
            except TokenUnusable:
                return time.time()  # in hand, and the stack says it is too old already
            except ServiceUnavailable:
                continue
            except ApiError as error:
                if error.status != 404 and error.status < 500:
                    return None
                time.sleep(min(GET_PERIOD_SECONDS, max(0.0, remaining)))
            except PingbackGuardError:  # unsolvable, or still pending at the deadline
                return None
        return None

    def close(self) -> None:
        self._client.close()
