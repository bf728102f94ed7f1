"""Issue 33, fresh from the first task, on the running stack: a task submitted to a fresh stack
with its pingback lost is checked by a poller invocation the submit starts (Lambda Invoke,
authorized against the submit's role), before the schedule's first minute; a second task
submitted while that invocation sweeps starts none.

The schedule is disabled as the stack comes up (its first invocation is a minute away), so
any poller invocation here is one a submit started."""

from __future__ import annotations

import time
from typing import Any

import pytest

from infra.local import LocalStack
from infra.simulator import Simulator
from tests.local.support import table_item, task_status
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {
    "seed": 33,
    "solve_time": {"kind": "uniform", "min_seconds": 10, "max_seconds": 12},
    "unsolvable_rate": 0,
    "faults": {"pingback_drop_rate": 1.0},
}
# One submit process: its quiet period decides whether a second submit starts the poller.
STACK_OPTIONS: dict[str, Any] = {"workers_by_function": {"SubmitFunction": 1}}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
# reCAPTCHA's first check: 15 s after submit at the earliest (2captcha's rule); solved by then.
FIRST_CHECK_AFTER = 15.0
# A sweep every PollSweepIntervalSeconds (5 s), and a loaded machine's slack.
CHECKED_WITHIN = FIRST_CHECK_AFTER + 5 + 10


def test_a_fresh_stacks_first_task_is_checked_by_a_poller_the_submit_starts(
    stack: LocalStack, simulator: Simulator
) -> None:
    stack.set_schedules(False)
    stack.reset_calls()
    worker = stack.ready.signed_session()
    submitted_at = time.time()
    answer = worker.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    assert answer.status_code == 202, answer.text
    task_id = str(answer.json()["task_id"])

    # Then the submit asked Lambda to start the poller, once, and the twin ran it.
    invokes = [c for c in stack.calls_report()["calls"] if c["operation"] == "Invoke"]
    assert [(c["function"], c["service"], c["outcome"]) for c in invokes] == [
        ("SubmitFunction", "lambda", "ok")
    ]
    # And the task's result, its pingback lost, is the poller's within a sweep of its first check.
    wait_until(lambda: task_status(stack, task_id) == "SOLVED", timeout=CHECKED_WITHIN + 30)
    solved_at = time.time()
    item = table_item(stack, task_id)
    assert item["delivered_via"]["S"] == "poll"
    assert solved_at - submitted_at <= CHECKED_WITHIN
    fate = next(t for t in simulator.tasks() if str(t["id"]) == task_id)
    assert [d["outcome"] for d in fate["deliveries"]] == ["dropped"]
    assert stack.health()["schedules"] == {"PollerFunctionPollSchedule": 0}

    # When a second task comes after the submit's quiet period, the lease says an invocation
    # sweeps on: nothing more is started, and it is checked all the same.
    time.sleep(max(0.0, submitted_at + 10.5 - time.time()))
    second = worker.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    assert second.status_code == 202, second.text
    second_id = str(second.json()["task_id"])
    wait_until(lambda: task_status(stack, second_id) == "SOLVED", timeout=CHECKED_WITHIN + 30)
    assert stack.health()["lambda_invoke_api"]["queued"] == 1
    assert table_item(stack, second_id)["delivered_via"]["S"] == "poll"
