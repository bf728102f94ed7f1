"""The asyncio client: the same calls, awaited; waits do not hold a thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from pingback_guard_client import AsyncClient, Client, RetryPolicy, Unsolvable, WaitTimeout
from pingback_guard_client.transport import HttpAnswer
from tests.client.fake_transport import FakeTransport, solved, view


def async_client(
    *answers: HttpAnswer, poll_interval: float = 0.01
) -> tuple[AsyncClient, FakeTransport]:
    transport = FakeTransport(list(answers))
    client = Client(
        "https://unused.example",
        region="us-east-1",
        transport=transport,
        retry=RetryPolicy(attempts=2, base_seconds=0.01, max_seconds=0.01),
        poll_interval=poll_interval,
    )
    return AsyncClient(client=client), transport


def test_solve_submits_and_waits_on_the_event_loop() -> None:
    client, transport = async_client(
        HttpAnswer(202, {"task_id": "42"}), view(), solved(time.time())
    )

    async def run() -> str:
        async with client:
            return (await client.solve("userrecaptcha", "k", "https://p")).token

    assert asyncio.run(run()) == "03AGdBq2-token"
    assert [r[0] for r in transport.requests] == ["POST", "GET", "GET"] and transport.closed


def test_many_waits_run_concurrently() -> None:
    now = time.time()
    client, transport = async_client(*[view()] * 5, *[solved(now)] * 5, poll_interval=0.2)
    # Each wait's first request is answered only once all five are in flight together.
    all_asking = threading.Barrier(5, timeout=30)
    asked: set[str] = set()
    scripted = transport.request

    def request(method: str, path: str, body: Mapping[str, Any] | None) -> HttpAnswer:
        if path not in asked:
            asked.add(path)
            all_asking.wait()
        return scripted(method, path, body)

    transport.request = request  # type: ignore[method-assign]

    async def run() -> list[str]:
        solutions = await asyncio.gather(*(client.wait(str(n), timeout=60) for n in range(5)))
        return [s.token for s in solutions]

    assert asyncio.run(run()) == ["03AGdBq2-token"] * 5
    assert len(asked) == 5


def test_async_errors_are_the_sync_client_s() -> None:
    failed, _ = async_client(view("FAILED", error="ERROR_CAPTCHA_UNSOLVABLE"))
    with pytest.raises(Unsolvable):
        asyncio.run(failed.wait("42"))
    pending, _ = async_client(*[view()] * 50)
    with pytest.raises(WaitTimeout):
        asyncio.run(pending.wait("42", timeout=0.05))
    reported, transport = async_client(HttpAnswer(200, {"task_id": "42", "reported": "good"}))
    assert asyncio.run(reported.report("42", correct=True)) == "good"
    assert transport.requests == [("POST", "/tasks/42/report", {"correct": True})]
