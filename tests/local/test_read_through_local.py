"""Issue 10 on the running stack: every pingback dropped, a waiting worker's GET finds its token
within one check gap of the provider finishing it, with honest bounds; then it reports it."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from infra.local import LocalStack
from infra.simulator import Simulator
from pingback_guard.logic.poll_schedule import CheckSchedule

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {
    "seed": 11,
    # Finished well after the first poll time, so only a read-through can be prompt.
    "solve_time": {"kind": "uniform", "min_seconds": 20, "max_seconds": 23},
    "unsolvable_rate": 0,
    "faults": {"pingback_drop_rate": 1.0},
}
STACK_OPTIONS: dict[str, Any] = {
    # The scheduled poller asks once at the first poll time, then backs off for minutes:
    # whatever arrives in this test arrives by read-through.
    # Likely solved (the first check) at 15 s, reCAPTCHA's earliest: before these solves.
    "parameter_overrides": {
        "ExpectedSolveSeconds": "15",
        "CallbackTimeoutSeconds": "10",
        "PollBackoffBaseSeconds": "600",
        "PollBackoffMaxSeconds": "3600",
        # No invocation sweeps, as on a stack whose wake failed: the read-through is the net.
        "PollerWakeOnSubmit": "false",
    },
}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
CHECK_INTERVAL = 5.0  # ReadThroughIntervalSeconds, the template's default
# A worker's checks follow the poller's growing gaps, from that interval up.
READ_THROUGH_GAPS = CheckSchedule(CHECK_INTERVAL, 3600)
# reCAPTCHA's first check comes 15 s after submit at the earliest (2captcha's rule), even with
# the CallbackTimeoutSeconds of 10 s below.
FIRST_POLL_AFTER = 15.0
WORKER_GET_EVERY = 0.5


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


@dataclass(frozen=True)
class Waited:
    view: dict[str, Any]
    had_it_at: float
    slack: float
    """How late the worker could see a check's answer: the longest gap between two of its GETs
    (the sleep plus a loaded machine's latency) plus how long the last GET took."""


def wait_as_a_worker(
    worker: requests.Session, api_url: str, task_id: str, timeout: float
) -> Waited:
    deadline = time.time() + timeout
    starts: list[float] = []
    while time.time() < deadline:
        starts.append(time.time())
        answer = worker.get(f"{api_url}/tasks/{task_id}", timeout=30)
        assert answer.status_code == 200, answer.text
        view: dict[str, Any] = answer.json()
        if view["status"] != "PENDING":
            had_it_at = time.time()
            spacing = max((b - a for a, b in itertools.pairwise(starts)), default=0.0)
            return Waited(view, had_it_at, spacing + had_it_at - starts[-1])
        time.sleep(WORKER_GET_EVERY)
    raise AssertionError(f"task {task_id} still PENDING after {timeout} s")


def test_a_lost_pingbacks_token_reaches_the_waiting_worker_within_one_check_gap(
    stack: LocalStack, simulator: Simulator
) -> None:
    worker = stack.ready.signed_session()
    submitted = worker.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    assert submitted.status_code == 202, submitted.text
    task_id = str(submitted.json()["task_id"])

    waited = wait_as_a_worker(worker, stack.ready.api_url, task_id, timeout=60)
    view, had_it_at, slack = waited.view, waited.had_it_at, waited.slack

    fate = truth(simulator, task_id)
    # The last check before the finish came no later than the finish: its gap is no longer.
    gap = READ_THROUGH_GAPS.gap(fate["finished_at"] - view["submitted_at"])
    assert [d["outcome"] for d in fate["deliveries"]] == ["dropped"]
    assert (view["status"], view["solution"], view["delivered_via"]) == (
        "SOLVED",
        fate["code"],
        "read_through",
    )
    assert had_it_at - fate["finished_at"] <= gap + slack
    # Honest bounds: the real finish lies between them, and the age counts from the earliest.
    assert view["finished_at_earliest"] <= fate["finished_at"] <= view["finished_at_latest"]
    assert view["finished_at_latest"] - view["finished_at_earliest"] <= gap + slack
    assert view["usable"] is True
    assert view["usable_until"] == pytest.approx(view["finished_at_earliest"] + 120)
    assert view["token_age_seconds"] >= had_it_at - fate["finished_at"] - slack

    reported = worker.post(
        f"{stack.ready.api_url}/tasks/{task_id}/report", json={"correct": False}, timeout=30
    )
    assert (reported.status_code, reported.json()) == (200, {"task_id": task_id, "reported": "bad"})
    assert truth(simulator, task_id)["reports"] == ["reportbad"]
    again = worker.post(
        f"{stack.ready.api_url}/tasks/{task_id}/report", json={"correct": True}, timeout=30
    )
    assert (again.status_code, again.json()["error"]) == (409, "already_reported")
    bad = worker.post(
        f"{stack.ready.api_url}/tasks/{task_id}/report", json={"correct": "no"}, timeout=30
    )
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_field"


def test_res_php_is_asked_at_most_once_per_interval_however_many_workers_wait(
    stack: LocalStack, simulator: Simulator
) -> None:
    worker = stack.ready.signed_session()
    submitted = worker.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    task_id = str(submitted.json()["task_id"])
    before = simulator.stats()
    time.sleep(FIRST_POLL_AFTER + 0.5)
    started = time.time()
    with worker as session:
        for _ in range(20):  # four workers asking every half second for 2.5 s
            for _ in range(4):
                session.get(f"{stack.ready.api_url}/tasks/{task_id}", timeout=30)
            time.sleep(0.5)
    elapsed = time.time() - started
    after = simulator.stats()
    asked = _res_get_requests(after) - _res_get_requests(before)
    # The poller's first check may fall in this window too.
    assert asked <= int(elapsed // CHECK_INTERVAL) + 1 + 1, (asked, elapsed)


def _res_get_requests(stats: dict[str, dict[str, int]]) -> int:
    return stats["res_actions"]["get"]
