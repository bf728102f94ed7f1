"""The worker client against the real template on the local stack, with the CaptchaAI simulator.

Tests of routes another branch adds (report, pingback URLs, registration) are skipped while the
local gateway's route table has no such route (its own 404), and run as soon as it has one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from botocore.credentials import Credentials

from infra.local import LocalStack
from infra.local.apigateway.signing import credentials_of
from infra.local.runtime.aws import WORKER
from infra.simulator import Simulator
from pingback_guard_client import (
    ApiError,
    AsyncClient,
    Client,
    CredentialsError,
    WaitTimeout,
)
from tests.local.support import QUICK_SOLVES

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {**QUICK_SOLVES, "seed": 11}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s
    "parameter_overrides": {"CallbackTimeoutSeconds": "10", "PollBackoffBaseSeconds": "5"},
}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://www.google.com/recaptcha/api2/demo"
GATEWAY_NOT_FOUND = {"message": "Not Found"}


@pytest.fixture
def client(stack: LocalStack) -> Iterator[Client]:
    with Client(
        stack.ready.api_url, stack.ready.region, credentials=credentials_of(WORKER)
    ) as worker:
        yield worker


@pytest.fixture(autouse=True)
def calm(simulator: Simulator) -> Iterator[None]:
    yield
    simulator.update_faults(pingback_drop_rate=0.0, res_5xx_rate=0.0)


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


def require_route(stack: LocalStack, method: str, path: str) -> None:
    """Fail when the gateway's route table has no such route (it answers its own 404)."""
    answer = stack.ready.signed_session().request(
        method, f"{stack.ready.api_url}{path}", json={}, timeout=30
    )
    if answer.status_code == 404 and answer.json() == GATEWAY_NOT_FOUND:
        pytest.fail(f"{method} {path}: the template has no such route (the gateway's own 404)")


def test_solve_returns_the_provider_s_token_with_honest_age_bounds(
    client: Client, simulator: Simulator
) -> None:
    started = time.time()
    solution = client.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
    assert solution.token == truth(simulator, solution.task_id)["code"]
    assert started - 1 <= solution.finished_at_earliest <= solution.finished_at_latest
    assert solution.finished_at_latest <= time.time() + 1
    assert 0 <= solution.age < 60 and solution.delivered_via == "callback"
    assert solution.usable_at(time.time())


def test_the_async_client_solves_several_tasks_at_once(
    stack: LocalStack, simulator: Simulator
) -> None:
    async def solve_three() -> list[tuple[str, str]]:
        async with AsyncClient(
            stack.ready.api_url, stack.ready.region, credentials=credentials_of(WORKER)
        ) as worker:
            solutions = await asyncio.gather(
                *(worker.solve("hcaptcha", SITEKEY, PAGE_URL, timeout=60) for _ in range(3))
            )
        return [(s.task_id, s.token) for s in solutions]

    solved = asyncio.run(solve_three())
    assert len({task_id for task_id, _ in solved}) == 3
    assert all(token == truth(simulator, task_id)["code"] for task_id, token in solved)


def test_wait_times_out_while_the_result_has_not_reached_the_stack(
    client: Client, simulator: Simulator
) -> None:
    # The provider solves in 1-2 s, sooner than a loaded machine returns a submit: until the
    # first wait is over, neither the pingback nor res.php tells the stack the result.
    simulator.update_faults(pingback_drop_rate=1.0, res_5xx_rate=1.0)
    task_id = client.submit("userrecaptcha", SITEKEY, PAGE_URL)
    with pytest.raises(WaitTimeout):
        client.wait(task_id, timeout=0.3)
    simulator.update_faults(res_5xx_rate=0.0)
    assert client.wait(task_id, timeout=60).task_id == task_id


def test_a_lost_pingback_still_reaches_the_waiting_worker(
    client: Client, simulator: Simulator
) -> None:
    simulator.update_faults(pingback_drop_rate=1.0)
    solution = client.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=90)
    assert solution.token == truth(simulator, solution.task_id)["code"]
    assert solution.delivered_via in {"poll", "read_through"}


def test_unsigned_or_wrongly_signed_calls_are_refused(stack: LocalStack) -> None:
    assert requests.get(f"{stack.ready.api_url}/tasks/1", timeout=30).status_code == 403
    wrong = Credentials(WORKER.access_key, "not-the-secret-key", WORKER.session_token)
    with (
        Client(stack.ready.api_url, stack.ready.region, credentials=wrong) as impostor,
        pytest.raises(CredentialsError),
    ):
        impostor.task("1")


def test_report_tells_the_provider_once(stack: LocalStack, client: Client) -> None:
    require_route(stack, "POST", "/tasks/1/report")
    solution = client.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
    assert client.report(solution.task_id, correct=False) == "bad"
    with pytest.raises(ApiError) as again:
        client.report(solution.task_id, correct=True)
    assert (again.value.status, again.value.error) == (409, "already_reported")
    assert client.task(solution.task_id).reported == "bad"


def test_a_task_submitted_with_the_2captcha_sdk_request_shape_is_protected_once_registered(
    stack: LocalStack, client: Client, simulator: Simulator
) -> None:
    require_route(stack, "POST", "/pingback-urls")
    require_route(stack, "PUT", "/tasks/1")
    simulator.update_faults(pingback_drop_rate=1.0)
    pingback = client.pingback_url()
    # What 2captcha-python's solver.send(method=..., googlekey=..., url=..., callback=...) posts:
    # a form to in.php, `url` renamed pageurl, `callback` renamed pingback, its soft_id, no json.
    answer = requests.post(
        f"{simulator.base_url}/in.php",
        data={
            "method": "userrecaptcha",
            "googlekey": SITEKEY,
            "pageurl": PAGE_URL,
            "pingback": pingback.url,
            "key": simulator.api_key,
            "soft_id": "4580",
        },
        timeout=30,
    )
    assert answer.text.startswith("OK|"), answer.text
    task_id = answer.text[3:]
    assert client.register(task_id, pingback, "userrecaptcha", SITEKEY, PAGE_URL) == task_id
    assert client.register(task_id, pingback, "userrecaptcha", SITEKEY, PAGE_URL) == task_id
    with pytest.raises(ApiError) as conflict:
        client.register(task_id, pingback, "hcaptcha", SITEKEY, PAGE_URL)
    assert conflict.value.status == 409
    # Nobody asks for it: the scheduled poller alone recovers the lost pingback's result.
    stored = wait_for_status(stack, task_id, "SOLVED", timeout=120)
    assert stored["delivered_via"]["S"] == "poll"
    solution = client.wait(task_id, timeout=30)
    assert solution.token == truth(simulator, task_id)["code"]
    assert [d["outcome"] for d in truth(simulator, task_id)["deliveries"]] == ["dropped"]


def wait_for_status(stack: LocalStack, task_id: str, status: str, timeout: float) -> Any:
    """The task's item once it has ``status``, read from the table (a GET would read through)."""
    table = stack.ready.aws_client("dynamodb")
    deadline = time.time() + timeout
    while time.time() < deadline:
        item = table.get_item(
            TableName=stack.ready.tasks_table, Key={"task_id": {"S": task_id}}, ConsistentRead=True
        ).get("Item")
        if item and item["status"]["S"] == status:
            return item
        time.sleep(1)
    raise AssertionError(f"task {task_id} not {status} after {timeout} s")
