"""The real template and handlers on the local stack, with the CaptchaAI simulator: every safety
net proven end to end over HTTP, moto and real worker processes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.local import FaultRule, LocalStack
from infra.simulator import Simulator
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {**QUICK_SOLVES, "seed": 7}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s, DLQ visibility 6 s
    "parameter_overrides": {
        "CallbackTimeoutSeconds": "10",
        "PollBackoffBaseSeconds": "5",
        "MaxReceiveCount": "2",
    },
}
TASK = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}


@pytest.fixture(autouse=True)
def calm(stack: LocalStack, simulator: Simulator) -> Iterator[None]:
    yield
    stack.set_faults([])
    simulator.update_faults(pingback_drop_rate=0.0)


def worker(stack: LocalStack) -> requests.Session:
    """A session signing like a worker: /tasks routes verify SigV4."""
    return stack.ready.signed_session()


def submit(stack: LocalStack) -> str:
    answer = worker(stack).post(f"{stack.ready.api_url}/tasks", json=TASK, timeout=30)
    assert answer.status_code == 202, answer.text
    return str(answer.json()["task_id"])


def task_view(stack: LocalStack, task_id: str) -> dict[str, Any]:
    answer = worker(stack).get(f"{stack.ready.api_url}/tasks/{task_id}", timeout=30)
    return dict(answer.json()) if answer.status_code == 200 else {}


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


def solved_view(stack: LocalStack, task_id: str, timeout: float) -> dict[str, Any]:
    wait_until(lambda: task_view(stack, task_id).get("status") == "SOLVED", timeout=timeout)
    return task_view(stack, task_id)


def stored_view(stack: LocalStack, task_id: str, timeout: float) -> dict[str, Any]:
    """Waits on the table, not on GET: a GET of an overdue task would check res.php itself
    (read-through) and race the net under test."""

    def solved() -> bool:
        item = stack.ready.aws_client("dynamodb").get_item(
            TableName=stack.ready.tasks_table, Key={"task_id": {"S": task_id}}
        )
        return item.get("Item", {}).get("status", {}).get("S") == "SOLVED"

    wait_until(solved, timeout=timeout)
    return task_view(stack, task_id)


def test_submit_then_pingback_then_the_result_is_served(
    stack: LocalStack, simulator: Simulator
) -> None:
    task_id = submit(stack)
    view = solved_view(stack, task_id, timeout=30)
    assert view["solution"] == truth(simulator, task_id)["code"]
    assert view["delivered_via"] == "callback" and view["token_age_seconds"] >= 0


def test_a_dropped_pingback_is_recovered_by_the_scheduled_poller(
    stack: LocalStack, simulator: Simulator
) -> None:
    simulator.update_faults(pingback_drop_rate=1.0)
    task_id = submit(stack)
    view = stored_view(stack, task_id, timeout=60)
    assert (view["solution"], view["delivered_via"]) == (truth(simulator, task_id)["code"], "poll")
    assert [d["outcome"] for d in truth(simulator, task_id)["deliveries"]] == ["dropped"]


def test_a_store_failure_goes_through_the_dlq_and_the_replay_function(
    stack: LocalStack, simulator: Simulator
) -> None:
    stack.set_faults(
        [
            FaultRule(
                mode="unavailable",
                function="CallbackFunction",
                service="dynamodb",
                until=time.time() + 3600,
            )
        ]
    )
    task_id = submit(stack)
    wait_until(lambda: bool(truth(simulator, task_id)["deliveries"]), timeout=30)
    assert (
        truth(simulator, task_id)["deliveries"][0]["outcome"] == 200
    )  # acknowledged: it is in the DLQ
    stack.set_faults([])
    view = stored_view(stack, task_id, timeout=30)
    assert (view["solution"], view["delivered_via"]) == (
        truth(simulator, task_id)["code"],
        "replay",
    )


def test_a_message_that_always_fails_is_parked(stack: LocalStack) -> None:
    client = stack.ready.aws_client("sqs")
    client.send_message(
        QueueUrl=stack.ready.dlq_url,
        MessageBody=json.dumps({"kind": "result", "task_id": "not-digits"}),
    )

    def parked() -> list[dict[str, Any]]:
        answer = client.receive_message(
            QueueUrl=stack.ready.parking_queue_url, MaxNumberOfMessages=10
        )
        return list(answer.get("Messages", []))

    found = wait_until(parked, timeout=60)
    assert json.loads(found[0]["Body"])["task_id"] == "not-digits"


def test_no_log_of_the_stack_holds_the_callback_secret_the_api_key_or_a_token(
    stack: LocalStack, simulator: Simulator
) -> None:
    secrets = stack.ready.aws_client("secretsmanager")
    document = json.loads(
        secrets.get_secret_value(SecretId=stack.ready.outputs["CallbackSecretArn"])["SecretString"]
    )
    submit(stack)
    tokens = [t["code"] for t in simulator.tasks() if t["outcome"] == "solved"]
    logs = "".join(path.read_text(errors="replace") for path in Path(stack.ready.log_dir).glob("*"))
    assert "callback/{secret}" in logs or "CallbackFunction" in logs
    assert document["current"] not in logs
    assert simulator.api_key not in logs
    assert not [token for token in tokens if token in logs]


def test_one_tasks_pingback_url_decides_no_other_task_and_no_future_task(
    stack: LocalStack, simulator: Simulator
) -> None:
    """Issue 9: task A's real pingback URL, replayed by an attacker on task B's id and on every id
    the provider may hand out next, is refused for B and discarded for the next task."""
    simulator.update_faults(pingback_drop_rate=1.0)  # B and C stay PENDING until polled
    task_a, task_b = submit(stack), submit(stack)
    leaked = truth(simulator, task_a)["pingback_url"]
    assert "/callback/v2." in leaked
    assert leaked != truth(simulator, task_b)["pingback_url"]

    def forge(task_id: str, code: str) -> int:
        answer = requests.get(leaked, params={"id": task_id, "code": code}, timeout=30)
        return answer.status_code

    forged = "03AFforged" + "F" * 200
    assert forge(task_b, forged) == 403
    assert forge(task_b, "ERROR_CAPTCHA_UNSOLVABLE") == 403
    forged_future = "FORGED-" + "F" * 100
    # An unknown ERROR-looking code is an answer like any other (issue 23): refused for B too.
    assert forge(task_b, "ERROR_NOT_A_PROVIDER_CODE") == 403
    assert forge(task_b, "ERROR_ZERO_BALANCE") == 400  # a status, never a task's answer
    future_ids = [str(int(task_b) + gap) for gap in range(1, 98)]
    # One provisional result per capability: the first id, then refused.
    answers = [forge(task_id, forged_future) for task_id in future_ids]
    assert answers == [200] + [403] * (len(future_ids) - 1)
    task_c = submit(stack)
    assert task_c in future_ids

    for task_id in (task_b, task_c):
        view = solved_view(stack, task_id, timeout=60)
        assert view["solution"] == truth(simulator, task_id)["code"]
        # Recovered by the stack's own res.php checks (the poller or a waiting worker's GET).
        assert view["delivered_via"] in {"poll", "read_through"}
    # An id nobody registered keeps the forged code only provisionally, and no worker sees it.
    unregistered = next(task_id for task_id in future_ids if task_id != task_c)
    assert (
        worker(stack).get(f"{stack.ready.api_url}/tasks/{unregistered}", timeout=30).status_code
        == 404
    )
