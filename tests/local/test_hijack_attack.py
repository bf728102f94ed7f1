"""Issue 22 through the local stack: a second principal holding one pingback URL posts forged
tokens for the next 100 task ids and registers them, then the victim submits. Every victim task
ends SOLVED with exactly the provider's code, readable by the victim only; the attacker's
attempts are counted and alarmed; no event reaches the bus for a task the attacker does not own.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import requests

from infra.local import LocalStack
from infra.local.runtime.aws import OTHER_WORKER, WORKER
from infra.simulator import Simulator
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {**QUICK_SOLVES, "seed": 22}
# At this time scale a nominal minute is 2 s: the forger's 99 refused pingbacks spread over a
# few of them, so the rejected-callbacks threshold is lowered to what one such minute sees.
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,
    "parameter_overrides": {"RejectedCallbacksAlarmThreshold": "10"},
}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
FORGED = "FORGED" + "F" * 200
ATTACKED_IDS = 100
VICTIM_TASKS = 4


def submit(session: requests.Session, stack: LocalStack) -> str:
    answer = session.post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task_id"])


def view(session: requests.Session, stack: LocalStack, task_id: str) -> tuple[int, dict[str, Any]]:
    answer = session.get(f"{stack.ready.api_url}/tasks/{task_id}", timeout=30)
    return answer.status_code, answer.json()


def is_solved(session: requests.Session, stack: LocalStack, task_id: str) -> bool:
    return view(session, stack, task_id)[1].get("status") == "SOLVED"


def provider_code(simulator: Simulator, task_id: str) -> str:
    return str(next(t for t in simulator.tasks() if str(t["id"]) == task_id)["code"])


def fired(stack: LocalStack, logical_id: str) -> bool:
    return any(
        change["logical_id"] == logical_id and change["new_state"] == "ALARM"
        for change in stack.alarms()["history"]
    )


def test_one_rogue_principal_with_one_url_takes_no_task_and_is_alarmed(
    stack: LocalStack, simulator: Simulator
) -> None:
    victim, rogue = stack.ready.signed_session(WORKER), stack.ready.signed_session(OTHER_WORKER)
    api = stack.ready.api_url
    # Given the rogue learns the current id from a task of its own and takes ONE pingback URL...
    own = submit(rogue, stack)
    url = rogue.post(f"{api}/pingback-urls", timeout=30).json()["pingback_url"]
    attacked = [str(int(own) + gap) for gap in range(1, ATTACKED_IDS + 1)]
    # ...When it posts forged tokens for, and registers, the next 100 ids...
    forged = [
        requests.get(url, params={"id": task_id, "code": FORGED}, timeout=30).status_code
        for task_id in attacked
    ]
    registered = [
        rogue.put(
            f"{api}/tasks/{task_id}", json={**TASK, "pingback_url": url}, timeout=30
        ).status_code
        for task_id in attacked
    ]
    # ...Then one provisional result at most (never readable), and no registration: the ids are
    # not the provider's yet, and the URL registers one id only.
    assert forged == [200] + [403] * (ATTACKED_IDS - 1)
    assert registered == [404] + [400] * (ATTACKED_IDS - 1)

    # When the victim submits: its first task lands among the attacked ids (ids grow by 1-97).
    victims = [submit(victim, stack) for _ in range(VICTIM_TASKS)]
    assert victims[0] in attacked
    # Then every victim task ends SOLVED with exactly the provider's code, the victim's alone.
    for task_id in victims:
        wait_until(functools.partial(is_solved, victim, stack, task_id), timeout=60)
        status, seen = view(victim, stack, task_id)
        assert (status, seen["solution"]) == (200, provider_code(simulator, task_id))
        assert view(rogue, stack, task_id)[0] == 404
        # The attacker's URL decides nothing on it, before or after.
        answer = requests.get(url, params={"id": task_id, "code": FORGED}, timeout=30)
        assert answer.status_code == 403
        assert view(victim, stack, task_id)[1]["solution"] == provider_code(simulator, task_id)
    # And the attacker's attempts are counted and alarmed.
    for alarm in ("RejectedCallbacksAlarm", "CallbackUnregisteredAlarm", "ApiTasks4xxRateAlarm"):
        wait_until(functools.partial(fired, stack, alarm), timeout=60)
    # And no event reaches the bus for a task the attacker does not own.
    wait_until(stack.result_events_settled, timeout=60)
    details = [event["detail"] for event in stack.published_events()]
    rogue_arn = OTHER_WORKER.user_arn
    assert {d["task_id"] for d in details if d["owner"] == rogue_arn} <= {own}
    for task_id in victims:
        mine = [d for d in details if d["task_id"] == task_id]
        assert mine and {(d["owner"], d["status"]) for d in mine} == {(WORKER.user_arn, "SOLVED")}
    # PublishTokens is off by default: no token (forged or real) rides on the bus.
    assert not any("solution" in d for d in details)
