"""The simulated worker of the freshness benchmark: submit with POST /tasks, wait with
GET /tasks/{task_id} about once a second, note the moment it holds the token.

`TaskWaiter` is the one place to swap for the worker client (`packages/client`,
`pingback_guard_client`) once it lands: its `wait(task_id, timeout)` replaces `HttpWaiter.wait`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import requests

GET_PERIOD_SECONDS = 1.0
REQUEST_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Waited:
    """The task's view when the worker stopped waiting, and when that was."""

    view: dict[str, Any]
    had_at: float
    gets: int


class TaskWaiter(Protocol):
    def submit(self, request: dict[str, Any]) -> str: ...

    def wait(self, task_id: str, timeout: float) -> Waited: ...


class HttpWaiter:
    """A worker without the client library: unsigned requests (the local gateway of this branch
    does not verify SigV4) and a plain one-second GET loop."""

    def __init__(self, api_url: str, period_seconds: float = GET_PERIOD_SECONDS) -> None:
        self._api_url = api_url.rstrip("/")
        self._period = period_seconds
        self._session = requests.Session()

    def submit(self, request: dict[str, Any]) -> str:
        answer = self._session.post(
            f"{self._api_url}/tasks", json=request, timeout=REQUEST_TIMEOUT_SECONDS
        )
        answer.raise_for_status()
        return str(answer.json()["task_id"])

    def wait(self, task_id: str, timeout: float) -> Waited:
        deadline = time.time() + timeout
        gets = 0
        view: dict[str, Any] = {}
        while time.time() < deadline:
            asked_at = time.time()
            answer = self._session.get(
                f"{self._api_url}/tasks/{task_id}", timeout=REQUEST_TIMEOUT_SECONDS
            )
            gets += 1
            if answer.status_code == 200:
                view = answer.json()
                if view.get("status") != "PENDING":
                    return Waited(view, time.time(), gets)
            time.sleep(max(0.0, self._period - (time.time() - asked_at)))
        return Waited(view, time.time(), gets)

    def close(self) -> None:
        self._session.close()
