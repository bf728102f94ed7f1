"""Push (issue 24) on the local stack: the template's WebSocket API, its PushFunction fed by the
result event bus, and the worker client's push channel, against the CaptchaAI simulator."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from infra.client_worker import ClientWaiter, WaitMode
from infra.local import LocalStack
from infra.local.apigateway.signing import credentials_of, local_signed_session
from infra.local.runtime.aws import OTHER_WORKER, WORKER, LocalPrincipal
from infra.simulator import Simulator
from pingback_guard_client import AsyncClient, Client
from pingback_guard_client.signing import signed_headers
from pingback_guard_client.transport import HttpAnswer, RequestsTransport
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {**QUICK_SOLVES, "seed": 24}
STACK_OPTIONS: dict[str, Any] = {"time_scale": 30}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://www.google.com/recaptcha/api2/demo"


class CountingTransport(RequestsTransport):
    """Counts the GETs a wait made, so a test can tell a pushed result from a polled one."""

    def __init__(self, stack: LocalStack, principal: LocalPrincipal) -> None:
        super().__init__(stack.ready.api_url, local_signed_session(stack.ready.region, principal))
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    def request(self, method: str, path: str, body: Mapping[str, Any] | None) -> HttpAnswer:
        with self._lock:
            self.requests[method] += 1
        return super().request(method, path, body)


def pushed_client(stack: LocalStack, principal: LocalPrincipal = WORKER) -> Client:
    return Client(
        stack.ready.api_url,
        stack.ready.region,
        credentials=credentials_of(principal),
        transport=CountingTransport(stack, principal),
        push_url=stack.ready.websocket_url,
    )


def gets(client: Client) -> int:
    transport = client._transport
    assert isinstance(transport, CountingTransport)
    return transport.requests["GET"]


@pytest.fixture(autouse=True)
def push_up(stack: LocalStack) -> Iterator[None]:
    yield
    stack.set_websocket_apis(True)


def test_the_ready_line_and_outputs_name_the_local_websocket_url(stack: LocalStack) -> None:
    url = stack.ready.websocket_url
    assert url is not None and url.startswith("ws://127.0.0.1:") and url.endswith("/v1")
    assert stack.ready.outputs["WebSocketUrl"] == url


def test_a_final_result_is_pushed_to_its_waiting_worker_without_a_get(
    stack: LocalStack, simulator: Simulator
) -> None:
    with pushed_client(stack) as worker:
        solution = worker.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
        code = next(t["code"] for t in simulator.tasks() if str(t["id"]) == solution.task_id)
        assert solution.token == code and solution.usable_at(solution.finished_at_latest)
        assert gets(worker) == 0


def test_the_asyncio_client_is_woken_by_the_push(stack: LocalStack) -> None:
    async def solve() -> tuple[str, int]:
        client = pushed_client(stack)
        async with AsyncClient(client=client) as worker:
            solution = await worker.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
            return solution.token, gets(client)

    token, get_count = asyncio.run(solve())
    assert token and get_count == 0


def test_a_worker_that_reconnects_gets_the_result_it_missed(stack: LocalStack) -> None:
    stack.set_websocket_apis(False)
    with Client(
        stack.ready.api_url, stack.ready.region, credentials=credentials_of(WORKER)
    ) as submitter:
        task_id = submitter.submit("userrecaptcha", SITEKEY, PAGE_URL)
        wait_until(lambda: submitter.task(task_id).is_final, timeout=60)
    stack.set_websocket_apis(True)
    with pushed_client(stack) as worker:
        # The result was pushed to nobody: the subscribe on (re)connect answers it.
        assert worker.wait(task_id, timeout=30).task_id == task_id
        assert gets(worker) == 0


def test_with_push_down_the_worker_falls_back_to_paced_gets(stack: LocalStack) -> None:
    stack.set_websocket_apis(False)
    with pushed_client(stack) as worker:
        solution = worker.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
        assert solution.token
        assert worker.push is not None and not worker.push.connected
        assert gets(worker) >= 1


def test_only_the_task_s_owner_receives_its_result(stack: LocalStack) -> None:
    ready = stack.ready
    assert ready.websocket_url is not None
    headers = signed_headers(ready.websocket_url, ready.region, credentials_of(OTHER_WORKER))
    with (
        connect(ready.websocket_url, additional_headers=headers) as other,
        pushed_client(stack) as worker,
        pushed_client(stack, OTHER_WORKER) as other_worker,
    ):
        solution = worker.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
        own = other_worker.solve("userrecaptcha", SITEKEY, PAGE_URL, timeout=60)
        ids = [solution.task_id, own.task_id]
        other.send(json.dumps({"action": "subscribe", "task_ids": ids}))
        received: list[dict[str, Any]] = []
        while {"task", "tasks"} - {message["type"] for message in received}:
            received.append(json.loads(other.recv(timeout=30)))
    # The other principal was connected throughout: its own result was pushed and answered,
    # the worker's task neither.
    mentioned = [
        found["task_id"]
        for message in received
        for found in ([message["task"]] if message["type"] == "task" else message["tasks"])
    ]
    assert set(mentioned) == {own.task_id}
    assert gets(worker) == 0


def test_connect_needs_a_valid_signature(stack: LocalStack) -> None:
    url = stack.ready.websocket_url
    assert url is not None
    with pytest.raises(InvalidStatus) as refused:
        connect(url, additional_headers={"Authorization": "AWS4-HMAC-SHA256 forged"})
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("push_up", [True, False], ids=["pushed", "fallback"])
def test_the_harness_worker_tells_a_pushed_result_from_one_a_fallback_get_found(
    stack: LocalStack, push_up: bool
) -> None:
    """What the chaos run's pushed-worker line counts (infra/chaos/waiting.py)."""
    stack.set_websocket_apis(push_up)
    waiter = ClientWaiter(
        stack.ready.api_url, stack.ready.region, WaitMode.PUSH, stack.ready.websocket_url
    )
    try:
        task_id = waiter.submit(
            {"method": "userrecaptcha", "sitekey": SITEKEY, "page_url": PAGE_URL}
        )
        assert waiter.had_token_at(task_id, timeout=60) is not None
        assert waiter.found_final_by_get(task_id) is not push_up
    finally:
        waiter.close()
