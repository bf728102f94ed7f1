"""The result events pipe is watched by what should flow through it: stopped while results land
(the state Pipes leaves a pipe in after persistent errors, its own metrics silent), its alarm
fires; started again, it publishes what it missed and the alarm clears."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from infra.local import LocalStack
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.long_running, pytest.mark.timeout(400)]

ALARM = "ResultEventsPipeStoppedAlarm"
SIMULATOR = {**QUICK_SOLVES, "seed": 26}
# A nominal 5-minute period lasts 10 s: the alarm's window (3 periods) 30 s.
STACK_OPTIONS: dict[str, Any] = {"time_scale": 30, "workers_per_function": 1}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
SUBMIT_EVERY_SECONDS = 1.0


class Workers:
    """Submits a task every SUBMIT_EVERY_SECONDS on a thread of its own, until stopped; the
    simulator solves each in 1-2 s and pings the stack back, which stores the token."""

    def __init__(self, stack: LocalStack) -> None:
        self._stack = stack
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pipe-alarm-workers")
        self.submitted: list[str] = []

    def __enter__(self) -> Workers:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stopping.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive()

    def _run(self) -> None:
        session = self._stack.ready.signed_session()
        while not self._stopping.wait(SUBMIT_EVERY_SECONDS):
            answer = session.post(f"{self._stack.ready.api_url}/tasks", json=TASK, timeout=30)
            if answer.status_code == 202:
                self.submitted.append(str(answer.json()["task_id"]))


@pytest.fixture
def workers(stack: LocalStack) -> Iterator[Workers]:
    with Workers(stack) as running:
        yield running


def state(stack: LocalStack) -> str:
    report = stack.alarms()
    (name,) = [n for n, spec in report["alarms"].items() if spec["logical_id"] == ALARM]
    return str(report["states"][name])


def changes(stack: LocalStack) -> list[str]:
    return [c["new_state"] for c in stack.alarms()["history"] if c["logical_id"] == ALARM]


def published_task_ids(stack: LocalStack) -> set[str]:
    return {str(event["detail"]["task_id"]) for event in stack.published_events()}


def solved_task_ids(stack: LocalStack, task_ids: list[str]) -> set[str]:
    table = stack.ready.aws_client("dynamodb")
    solved = set()
    for task_id in task_ids:
        item = table.get_item(TableName=stack.ready.tasks_table, Key={"task_id": {"S": task_id}})
        if item.get("Item", {}).get("status", {}).get("S") == "SOLVED":
            solved.add(task_id)
    return solved


def test_a_pipe_stopped_while_results_land_fires_its_alarm_and_clears_once_started(
    stack: LocalStack, workers: Workers
) -> None:
    # Given results land and the pipe publishes them, the alarm is OK.
    wait_until(lambda: state(stack) == "OK", timeout=120)
    wait_until(lambda: published_task_ids(stack), timeout=60)
    # When the pipe is stopped (Pipes' state after persistent errors: no event, no metric),
    stack.set_pipes(False)
    stopped_at = len(workers.submitted)
    # then the alarm fires once two periods stored tokens while the pipe published nothing,
    wait_until(lambda: state(stack) == "ALARM", timeout=120)
    assert changes(stack)[-2:] == ["OK", "ALARM"]
    during_stop = workers.submitted[stopped_at:]
    stored_during_stop = solved_task_ids(stack, during_stop)
    assert stored_during_stop
    assert not stored_during_stop & published_task_ids(stack)
    # And once the pipe is started again, it publishes what it missed and the alarm clears.
    stack.set_pipes(True)
    wait_until(lambda: stored_during_stop <= published_task_ids(stack), timeout=60)
    wait_until(lambda: state(stack) == "OK", timeout=120)
    assert changes(stack)[-3:] == ["OK", "ALARM", "OK"]
