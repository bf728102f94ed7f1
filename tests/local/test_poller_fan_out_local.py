"""Issue 33, the nets scale out with load, on the running stack: a helper invocation (the event
the main lease holder sends when its sweeps fall behind) takes its group's lease, recovers the
tasks of its group's due shards only, and gives the lease back; the main lease is not its.

The schedule is disabled and submits start no poller (PollerWakeOnSubmit false), so the helper
is the only invocation that checks anything here."""

from __future__ import annotations

import time
from typing import Any

import pytest

from infra.local import LocalStack
from infra.project_template import parameter_default, project_template
from infra.simulator import Simulator
from pingback_guard.data.due_index import due_shard_of
from tests.local.support import table_item, task_status
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.long_running, pytest.mark.timeout(300)]

SIMULATOR = {
    "seed": 33,
    "solve_time": {"kind": "uniform", "min_seconds": 5, "max_seconds": 8},
    "unsolvable_rate": 0,
    "faults": {"pingback_drop_rate": 1.0},
}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 6,  # the schedule every 10 s, once it is back on
    "parameter_overrides": {"PollerWakeOnSubmit": "false"},
}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
TASKS = 8
# The template's defaults: as many groups (PollerHelpers + 1) as DueShards, so group g is shard g.
SHARDS = int(parameter_default(project_template(), "DueShards"))
assert int(parameter_default(project_template(), "PollerHelpers")) + 1 == SHARDS
# reCAPTCHA's first check: 15 s after submit at the earliest (2captcha's rule).
FIRST_CHECK_AFTER = 15.0


def test_a_helper_recovers_its_groups_tasks_only_under_its_own_lease(
    stack: LocalStack, simulator: Simulator
) -> None:
    stack.set_schedules(False)
    worker = stack.ready.signed_session()
    shards: dict[str, int] = {}
    for _ in range(TASKS):
        answer = worker.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
        assert answer.status_code == 202, answer.text
        task_id = str(answer.json()["task_id"])
        shards[task_id] = int(due_shard_of(task_id, SHARDS))
    submitted_at = time.time()
    helped = next((shard for shard in sorted(set(shards.values())) if shard != 0), None)
    assert helped is not None, shards
    time.sleep(max(0.0, submitted_at + FIRST_CHECK_AFTER + 1 - time.time()))

    # When the main holder's fan-out event for that group reaches the function
    invocation = stack.invoke(
        "PollerFunction", {"source": "pingback-guard.fan-out", "group": helped}
    )

    # Then the helper swept that group only: its tasks are the poller's, the others wait
    assert invocation.ok, invocation.error
    assert invocation.result["start"] == "HELPER" and invocation.result["group"] == helped
    for task_id, shard in shards.items():
        if shard == helped:
            assert task_status(stack, task_id) == "SOLVED", task_id
            assert table_item(stack, task_id)["delivered_via"]["S"] == "poll"
        else:
            assert task_status(stack, task_id) == "PENDING", (task_id, shard)
    assert invocation.result["recovered"] == sum(s == helped for s in shards.values())
    # under its group's lease, given back; the main lease was never taken
    lease = table_item(stack, f"#poller-lease#{helped}")
    assert float(lease["lease_until"]["N"]) <= time.time()
    assert table_item(stack, "#poller-lease") == {}
    # and the tasks of the other groups are any poller's still
    stack.set_schedules(True)
    others = [task_id for task_id, shard in shards.items() if shard != helped]
    wait_until(lambda: all(task_status(stack, t) == "SOLVED" for t in others), timeout=150)
    assert all(
        fate["deliveries"] and fate["deliveries"][0]["outcome"] == "dropped"
        for fate in simulator.tasks()
    )
