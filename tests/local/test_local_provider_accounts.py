"""Issue 40 on the running stack (template.yaml) against a CaptchaAI simulator with two accounts
of two threads each (the stack's account 1 and account "2", ProviderExtraAccounts):

- submits past both plans are refused busy by the stack with nothing sent (the simulator never
  refuses one for its threads), each account holds at most its threads, the refused ones go
  through when threads free, nothing is lost, and ProviderThreadsBusyAlarm fires;
- account 1 out of balance mid-run (the simulator's zero_balance_accounts), every pingback
  dropped: every task goes to account 2 and is recovered through account 2 only (asked through
  account 1 it would be ERROR_WRONG_CAPTCHA_ID, a failed task).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from infra.local import LocalStack
from infra.simulator import Simulator
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

THREADS = 2
SIMULATOR: dict[str, Any] = {
    "seed": 40,
    "threads": THREADS,
    "extra_accounts": [{"threads": THREADS}],
    # Held long enough that a burst finds every thread in use.
    "solve_time": {"kind": "uniform", "min_seconds": 6, "max_seconds": 7},
    "unsolvable_rate": 0,
}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 10,
    # One submit container: its count of the threads it took is the whole stack's.
    "workers_by_function": {"SubmitFunction": 1},
}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
RESUBMIT_EVERY = 1.0


@pytest.fixture
def worker(stack: LocalStack) -> Iterator[requests.Session]:
    with stack.ready.signed_session() as session:
        yield session


def alarm_state(stack: LocalStack, logical_id: str) -> str | None:
    report = stack.alarms()
    names = [name for name, spec in report["alarms"].items() if spec["logical_id"] == logical_id]
    return report["states"].get(names[0]) if names else None


def submitted(stack: LocalStack, worker: requests.Session) -> str | None:
    """The task id, or None when the stack answered busy (503 provider_unavailable)."""
    answer = worker.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    if answer.status_code == 503:
        assert answer.json()["error"] == "provider_unavailable", answer.text
        return None
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task_id"])


def submitted_as_a_worker_does(stack: LocalStack, worker: requests.Session) -> str:
    """Sent again after a busy answer, as a worker does, until a thread is free."""
    task_id = wait_until(lambda: submitted(stack, worker), timeout=60, interval=RESUBMIT_EVERY)
    return str(task_id)


def solved(stack: LocalStack, worker: requests.Session, task_id: str) -> dict[str, Any]:
    def view() -> dict[str, Any] | None:
        answer = worker.get(f"{stack.ready.api_url}/tasks/{task_id}", timeout=30)
        document = answer.json()
        assert document.get("status") != "FAILED", document
        return dict(document) if document.get("status") == "SOLVED" else None

    found: dict[str, Any] = wait_until(view, timeout=90, interval=0.5)
    return found


def truth(simulator: Simulator) -> dict[str, dict[str, Any]]:
    return {str(task["id"]): task for task in simulator.tasks()}


def test_submits_past_every_plan_are_refused_busy_then_complete_and_the_alarm_fires(
    stack: LocalStack, simulator: Simulator, worker: requests.Session
) -> None:
    # When a worker sends six submits at once to two accounts of two threads
    first_tries = [submitted(stack, worker) for _ in range(6)]

    # Then four went out, two to each account, and two were refused by the stack itself
    accepted = [task_id for task_id in first_tries if task_id is not None]
    assert len(accepted) == 2 * THREADS, first_tries
    # And the refused ones go through once threads free (the worker sends them again)
    accepted += [submitted_as_a_worker_does(stack, worker) for _ in first_tries if _ is None]

    # Then nothing is lost: every task is solved with the provider's own answer
    fates = truth(simulator)
    for task_id in accepted:
        assert solved(stack, worker, task_id)["solution"] == fates[task_id]["code"]
    # And no account ever had more submits than threads: the simulator refused none
    assert simulator.stats()["plan"]["busy_refused"] == 0
    first_four = Counter(fates[task_id]["account"] for task_id in accepted[: 2 * THREADS])
    assert first_four == {0: THREADS, 1: THREADS}
    # And the operator is told the plans were full
    wait_until(lambda: alarm_state(stack, "ProviderThreadsBusyAlarm") == "ALARM", timeout=120)


def test_account_1_out_of_balance_mid_run_every_task_completes_through_account_2(
    stack: LocalStack, simulator: Simulator, worker: requests.Session
) -> None:
    # Given account 1 stops (ERROR_ZERO_BALANCE with free threads: "no active plan") and every
    # pingback is lost, so each result is read from res.php
    simulator.update_faults(zero_balance_accounts=[0], pingback_drop_rate=1.0)
    try:
        # When a worker submits four tasks
        task_ids = [submitted_as_a_worker_does(stack, worker) for _ in range(4)]

        # Then every one went to account 2 and is solved, read through account 2 only
        fates = truth(simulator)
        assert {fates[task_id]["account"] for task_id in task_ids} == {1}
        for task_id in task_ids:
            view = solved(stack, worker, task_id)
            assert view["solution"] == fates[task_id]["code"]
            assert view["delivered_via"] in {"poll", "read_through"}
    finally:
        simulator.update_faults(zero_balance_accounts=[], pingback_drop_rate=0.0)
