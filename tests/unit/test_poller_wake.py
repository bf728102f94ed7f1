"""Issue 33, fresh from the first task: a submit starts the poller when no invocation sweeps
on, at most once per process per quiet period, and a failed start never fails the submit."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ConnectTimeoutError
from botocore.stub import Stubber

from pingback_guard.domain.errors import PollerWakeError
from pingback_guard.domain.lease import PollerStart
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.logic.get_task import PollerWatch
from pingback_guard.logic.poll_schedule import KEEP_SWEEPING_AFTER_WORK_SECONDS
from pingback_guard.logic.poller_wake import WAKE_QUIET_SECONDS, PollerWake
from pingback_guard.logic.submit import IssuedPingback, PendingTasks, SubmitService
from pingback_guard.wake.poller import LambdaPollerWaker
from tests.fakes import (
    FakeDeadLetterQueue,
    FakePollerWaker,
    FakeProvider,
    InMemoryPollerState,
    InMemoryTaskStore,
    nonce_for,
    unavailable,
)

NOW = 10_000.0
POLLER = "pingback-guard-PollerFunction-1A2B3C4D5E6F"
REQUEST = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://example.test/login",
}
PINGBACK = IssuedPingback(nonce_for("x"), f"https://cb.test/callback/v1.{nonce_for('x')}.mac")


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def wake_of(
    store: InMemoryTaskStore, waker: FakePollerWaker, clock: Clock, failures: list[str]
) -> PollerWake:
    return PollerWake(
        PollerWatch(InMemoryPollerState(store)), waker, clock=clock, on_failed=failures.append
    )


def held(store: InMemoryTaskStore, since: float, until: float, busy_at: float | None) -> None:
    store.acquire_poller_lease("holder", now=since, until=until)
    if busy_at is not None:
        store.mark_poller_busy("holder", busy_at)


def released(store: InMemoryTaskStore, at: float, busy_at: float) -> None:
    held(store, at - 55, at + 15, None)
    store.release_poller_lease("holder", now=at, solve_samples={}, busy_at=busy_at)


@pytest.mark.parametrize(
    ("stack", "wakes"),
    [
        ("fresh: no invocation yet", 1),
        ("idle for longer than the keep-sweeping window", 1),
        ("an idle holder sweeping once (it may stop before the task's first check)", 1),
        ("a holder that had work sweeping", 0),
        ("a busy holder gave the lease back a moment ago: the next one sweeps on", 0),
        ("a busy holder gave it back long ago: its schedule is not running", 1),
    ],
)
def test_the_poller_is_started_unless_an_invocation_sweeps_on(stack: str, wakes: int) -> None:
    store, waker, clock, failures = InMemoryTaskStore(), FakePollerWaker(), Clock(), list[str]()
    long_ago = NOW - KEEP_SWEEPING_AFTER_WORK_SECONDS - 1
    if stack.startswith("idle"):
        released(store, long_ago, busy_at=long_ago)
    elif stack.startswith("an idle holder"):
        released(store, long_ago, busy_at=long_ago)
        held(store, NOW - 1, NOW + 69, None)
    elif stack.startswith("a holder that had work"):
        held(store, NOW - 20, NOW + 50, busy_at=NOW - 20)
    elif stack.startswith("a busy holder gave the lease back a moment"):
        released(store, NOW - 3, busy_at=NOW - 10)
    elif stack.startswith("a busy holder gave it back long ago"):
        released(store, NOW - 120, busy_at=NOW - 130)
    assert wake_of(store, waker, clock, failures).after_submit() is bool(wakes)
    assert (waker.woken, failures) == (wakes, [])


def test_at_most_one_start_per_quiet_period_in_a_process() -> None:
    """Given a fresh stack, when tasks are submitted in a row, then one start is asked for; the
    lease its invocation takes is read after the quiet period, and then nothing is started."""
    store, waker, clock = InMemoryTaskStore(), FakePollerWaker(), Clock()
    wake = wake_of(store, waker, clock, [])
    assert wake.after_submit()
    clock.now += WAKE_QUIET_SECONDS - 0.1
    assert not wake.after_submit() and waker.woken == 1
    held(store, NOW + 1, NOW + 71, busy_at=NOW + 1)  # the woken invocation's lease
    clock.now = NOW + WAKE_QUIET_SECONDS
    assert not wake.after_submit() and waker.woken == 1


def test_a_failed_start_is_told_and_tried_again_after_the_quiet_period() -> None:
    store, clock, failures = InMemoryTaskStore(), Clock(), list[str]()
    waker = FakePollerWaker(failure=lambda: PollerWakeError("Invoke refused: TooManyRequests"))
    wake = wake_of(store, waker, clock, failures)
    assert not wake.after_submit()
    assert failures == ["Invoke refused: TooManyRequests"]
    clock.now += WAKE_QUIET_SECONDS
    waker.failure = None
    assert wake.after_submit() and waker.woken == 1


def test_an_unreadable_lease_starts_the_poller() -> None:
    """The lease item cannot be read: a start costs at worst an invocation that finds the lease
    taken, and the task is checked when due either way."""
    store, waker = InMemoryTaskStore(), FakePollerWaker()
    store.fail_next.append(unavailable())
    assert wake_of(store, waker, Clock(), []).after_submit() and waker.woken == 1


def submitter(store: InMemoryTaskStore, wake: PollerWake) -> SubmitService:
    return SubmitService(
        store,
        FakeProvider(),
        FakeDeadLetterQueue(),
        PendingTasks(120, clock=lambda: NOW),
        sleep=lambda _: None,
        after_recorded=wake.after_submit,
    )


def test_a_submit_whose_poller_start_fails_is_recorded_and_answered() -> None:
    store, failures = InMemoryTaskStore(), list[str]()
    waker = FakePollerWaker(failure=lambda: PollerWakeError("Invoke failed: ConnectTimeoutError"))
    task = submitter(store, wake_of(store, waker, Clock(), failures)).submit(
        request_from_json(REQUEST), PINGBACK
    )
    assert store.get(task.task_id) is not None
    assert failures == ["Invoke failed: ConnectTimeoutError"]


def test_a_submit_queued_for_replay_starts_no_poller() -> None:
    """Not in the table: no poller invocation can see it before the replay writes it."""
    store, waker = InMemoryTaskStore(), FakePollerWaker()
    store.fail_next.extend([unavailable() for _ in range(4)])
    submitter(store, wake_of(store, waker, Clock(), [])).submit(
        request_from_json(REQUEST), PINGBACK
    )
    assert waker.woken == 0


def stubbed_lambda() -> tuple[Any, Stubber]:
    client = boto3.client(
        "lambda",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return client, Stubber(client)


def test_the_lambda_waker_invokes_the_poller_asynchronously_with_the_wake_event() -> None:
    client, stubber = stubbed_lambda()
    expected = {
        "FunctionName": POLLER,
        "InvocationType": "Event",
        "Payload": json.dumps({"source": PollerStart.WOKEN.value}).encode(),
    }
    stubber.add_response("invoke", {"StatusCode": 202, "Payload": io.BytesIO()}, expected)
    with stubber:
        LambdaPollerWaker(client, POLLER).wake()
    stubber.assert_no_pending_responses()
    assert PollerStart.of(json.loads(expected["Payload"])) is PollerStart.WOKEN  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "status"),
    [("TooManyRequestsException", 429), ("AccessDeniedException", 403)],
)
def test_a_refused_invoke_is_a_domain_error_naming_the_code(code: str, status: int) -> None:
    client, stubber = stubbed_lambda()
    stubber.add_client_error(
        "invoke", code, "User: arn:aws:sts::1:assumed-role/r/f is not authorized", status
    )
    with stubber, pytest.raises(PollerWakeError) as raised:
        LambdaPollerWaker(client, POLLER).wake()
    assert str(raised.value) == f"Invoke refused: {code}"


def test_an_unreachable_lambda_api_is_a_domain_error() -> None:
    class Unreachable:
        def invoke(self, **_: Any) -> dict[str, Any]:
            raise ConnectTimeoutError(endpoint_url="https://lambda.us-east-1.amazonaws.com")

    with pytest.raises(PollerWakeError, match=r"^Invoke failed: ConnectTimeoutError$"):
        LambdaPollerWaker(Unreachable(), POLLER).wake()
