"""Lambda's asynchronous queue in the twin, without a stack: retries up to MaximumRetryAttempts,
throttles kept and retried, events too old given up on, and the invocation record sent to the
on-failure (or on-success) destination in Lambda's shape
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from infra.local.lambda_.async_invocations import AsyncConfig, AsyncInvocations
from infra.local.lambda_.pool import Invocation
from tests.waiting import wait_until

FUNCTION = "ConsumerFunction"
ARN = "arn:aws:lambda:us-east-1:123456789012:function:stack-ConsumerFunction-ABC"
FAILED_QUEUE = "arn:aws:sqs:us-east-1:123456789012:consumer-failed"
DONE_QUEUE = "arn:aws:sqs:us-east-1:123456789012:consumer-done"
# Lambda's 1- and 2-minute retry delays, and ages, become 0.1 s and 0.2 s.
TIME_SCALE = 600.0
ERROR = {"errorType": "RuntimeError", "errorMessage": "boom", "stackTrace": []}
EVENT = {"detail-type": "Task Result", "detail": {"task_id": "7001"}}


@dataclass
class FakeFunction:
    """Answers each attempt from a script: "error", "throttle" (no worker free) or "ok"."""

    script: list[str]
    default: str = "ok"
    attempts: list[Any] = field(default_factory=list)
    records: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    refuse_records: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def try_invoke(self, logical_id: str, event: Any, wait_seconds: float) -> Invocation | None:
        with self.lock:
            answer = self.script.pop(0) if self.script else self.default
            if answer == "throttle":
                return None
            self.attempts.append(event)
            number = len(self.attempts)
        if answer == "error":
            return Invocation(f"attempt-{number}", error=ERROR)
        return Invocation(f"attempt-{number}", result={"applied": True})

    def send_record(
        self, logical_id: str, destination: str, record: Mapping[str, Any]
    ) -> str | None:
        if self.refuse_records:
            return "AccessDenied"
        with self.lock:
            self.records.append((destination, record))
        return None


@pytest.fixture
def started() -> Iterator[list[AsyncInvocations]]:
    queues: list[AsyncInvocations] = []
    yield queues
    for invocations in queues:
        invocations.stop(2)


def queue_for(
    function: FakeFunction, config: AsyncConfig, started: list[AsyncInvocations]
) -> AsyncInvocations:
    invocations = AsyncInvocations(
        {FUNCTION: config},
        {FUNCTION: ARN},
        try_invoke=function.try_invoke,
        send_record=function.send_record,
        time_scale=TIME_SCALE,
        workers_of=lambda _: 2,
    )
    invocations.start()
    started.append(invocations)
    return invocations


def settled(invocations: AsyncInvocations) -> bool:
    return invocations.backlog() == 0


def test_a_failing_event_is_tried_one_plus_its_retries_then_recorded_as_lambda_records_it(
    started: list[AsyncInvocations],
) -> None:
    # Given a function that fails every time, with the template's 2 retries and a failure queue
    function = FakeFunction(script=[], default="error")
    invocations = queue_for(function, AsyncConfig(2, 21600, FAILED_QUEUE), started)

    # When an event is invoked asynchronously
    request_id = invocations.submit(FUNCTION, EVENT)
    wait_until(lambda: settled(invocations) and function.records, timeout=10)

    # Then it ran three times, and its record went to the on-failure destination
    assert function.attempts == [EVENT, EVENT, EVENT]
    [(destination, record)] = function.records
    assert destination == FAILED_QUEUE
    assert set(record) == {
        "version",
        "timestamp",
        "requestContext",
        "requestPayload",
        "responseContext",
        "responsePayload",
    }
    assert record["version"] == "1.0"
    assert record["requestContext"] == {
        "requestId": request_id,
        "functionArn": f"{ARN}:$LATEST",
        "condition": "RetriesExhausted",
        "approximateInvokeCount": 3,
    }
    assert record["requestPayload"] == EVENT
    assert record["responseContext"] == {
        "statusCode": 200,
        "executedVersion": "$LATEST",
        "functionError": "Unhandled",
    }
    assert record["responsePayload"] == ERROR
    stats = invocations.report()[FUNCTION]
    assert (stats["attempts"], stats["retried"], stats["retries_exhausted"]) == (3, 2, 1)


@pytest.mark.parametrize("retries", [0, 1])
def test_maximum_retry_attempts_bounds_the_attempts(
    retries: int, started: list[AsyncInvocations]
) -> None:
    function = FakeFunction(script=[], default="error")
    invocations = queue_for(function, AsyncConfig(retries, 21600, FAILED_QUEUE), started)
    invocations.submit(FUNCTION, EVENT)
    wait_until(lambda: settled(invocations) and function.records, timeout=10)
    assert len(function.attempts) == retries + 1
    assert function.records[0][1]["requestContext"]["approximateInvokeCount"] == retries + 1


def test_an_event_that_succeeds_on_a_retry_is_not_recorded(
    started: list[AsyncInvocations],
) -> None:
    function = FakeFunction(script=["error"])
    invocations = queue_for(function, AsyncConfig(2, 21600, FAILED_QUEUE), started)
    invocations.submit(FUNCTION, EVENT)
    wait_until(lambda: settled(invocations) and len(function.attempts) == 2, timeout=10)
    assert function.records == []
    assert invocations.report()[FUNCTION]["succeeded"] == 1


def test_throttled_attempts_are_kept_and_tried_again_without_using_a_retry(
    started: list[AsyncInvocations],
) -> None:
    # Given a function with no retries whose workers are all busy for the first three tries
    function = FakeFunction(script=["throttle", "throttle", "throttle"])
    invocations = queue_for(function, AsyncConfig(0, 21600, FAILED_QUEUE), started)

    invocations.submit(FUNCTION, EVENT)
    wait_until(lambda: settled(invocations) and function.attempts, timeout=30)

    # Then it ran once, when a worker was free, and nothing was given up
    assert function.attempts == [EVENT]
    assert function.records == []
    assert invocations.report()[FUNCTION]["throttled"] == 3


def test_an_event_older_than_its_maximum_age_is_recorded_without_running(
    started: list[AsyncInvocations],
) -> None:
    # Given a function whose workers stay busy past the event's 60 s maximum age (0.1 s here)
    function = FakeFunction(script=[], default="throttle")
    invocations = queue_for(function, AsyncConfig(2, 60, FAILED_QUEUE), started)

    request_id = invocations.submit(FUNCTION, EVENT)
    wait_until(lambda: settled(invocations) and function.records, timeout=30)

    [(destination, record)] = function.records
    assert destination == FAILED_QUEUE
    assert record["requestContext"] == {
        "requestId": request_id,
        "functionArn": f"{ARN}:$LATEST",
        "condition": "EventAgeExceeded",
        "approximateInvokeCount": 0,
    }
    assert "responseContext" not in record
    assert function.attempts == []


def test_a_success_goes_to_the_on_success_destination_only(
    started: list[AsyncInvocations],
) -> None:
    function = FakeFunction(script=[])
    config = AsyncConfig(2, 21600, on_failure=FAILED_QUEUE, on_success=DONE_QUEUE)
    invocations = queue_for(function, config, started)
    invocations.submit(FUNCTION, EVENT)
    wait_until(lambda: settled(invocations) and function.records, timeout=10)
    [(destination, record)] = function.records
    assert destination == DONE_QUEUE
    assert record["requestContext"]["condition"] == "Success"
    assert record["responsePayload"] == {"applied": True}
    assert "functionError" not in record["responseContext"]


def test_a_record_the_destination_refuses_is_counted_as_a_delivery_failure(
    started: list[AsyncInvocations],
) -> None:
    function = FakeFunction(script=[], default="error", refuse_records=True)
    invocations = queue_for(function, AsyncConfig(0, 60, FAILED_QUEUE), started)
    invocations.submit(FUNCTION, EVENT)
    wait_until(
        lambda: invocations.report()[FUNCTION]["destination_delivery_failures"] == 1, timeout=10
    )
    assert invocations.report()[FUNCTION]["sent_to_destination"] == 0


def test_without_a_configuration_lambdas_defaults_apply() -> None:
    assert AsyncConfig.from_api({}) == AsyncConfig(2, 21600, None, None)
    stored = {
        "MaximumRetryAttempts": 0,
        "MaximumEventAgeInSeconds": 60,
        "DestinationConfig": {"OnFailure": {"Destination": FAILED_QUEUE}, "OnSuccess": {}},
    }
    assert AsyncConfig.from_api(stored) == AsyncConfig(0, 60, FAILED_QUEUE, None)
