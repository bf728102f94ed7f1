"""Issue 41 on the running stack (template.yaml): Lambda's asynchronous invocation as AWS runs it.

- A sweep that fails is not retried (the poller's MaximumRetryAttempts 0): its record, in
  Lambda's shape, lands in PollerFailedEventsQueue, sent as the poller's role, and the queue's
  alarm fires.
- The example consumer crashing after it applied a result is retried by Lambda (a minute later,
  here divided by the time scale), and the retry applies nothing twice: the consumer is
  idempotent under Lambda's own retries.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from infra.local import LocalStack
from infra.local.runtime.faults import FaultRule
from tests.local.test_local_result_events import applied_counts
from tests.result_events import rendered_detail
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR: dict[str, Any] = {"seed": 41}
# Lambda's first retry (1 minute) comes after 15 s: past the consumer's 10 s timeout, which is
# how long Powertools keeps its in-progress record of the crashed attempt.
STACK_OPTIONS: dict[str, Any] = {"time_scale": 4.0}
CRASH_WINDOW_SECONDS = 8.0
TOKEN = "03AFcWeA-async-token_" + "x" * 30


def received(stack: LocalStack, logical_id: str) -> list[dict[str, Any]]:
    """The messages of a queue of the stack (a moto queue's physical id is its URL)."""
    url = stack.ready.resources[logical_id]["physical_id"]
    messages = stack.ready.aws_client("sqs").receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1
    )
    return [json.loads(message["Body"]) for message in messages.get("Messages", [])]


def alarm_state(stack: LocalStack, logical_id: str) -> str | None:
    report = stack.alarms()
    names = [name for name, spec in report["alarms"].items() if spec["logical_id"] == logical_id]
    return report["states"].get(names[0]) if names else None


def test_a_failed_sweep_is_kept_in_the_poller_failure_queue_and_alarms(
    stack: LocalStack,
) -> None:
    stack.set_schedules(False)
    stack.set_faults([FaultRule(mode="crash", function="PollerFunction")])
    try:
        # When the poller is invoked asynchronously and its invocation fails
        event = {"source": "pingback-guard.scheduler", "attempt": "1"}
        request_id = stack.invoke_async("PollerFunction", event)
        # The queue's alarm fires on a visible message: looked at before the message is read.
        wait_until(lambda: alarm_state(stack, "PollerFailedEventsAlarm") == "ALARM", timeout=90)
    finally:
        stack.set_faults([])
    records = received(stack, "PollerFailedEventsQueue")

    # Then it was tried once (MaximumRetryAttempts 0) and its record is in the failure queue
    [record] = records
    context = record["requestContext"]
    assert context["requestId"] == request_id
    assert context["condition"] == "RetriesExhausted"
    assert context["approximateInvokeCount"] == 1
    assert context["functionArn"].endswith(":$LATEST")
    assert record["requestPayload"] == event
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert record["responsePayload"]["errorType"] == "Runtime.ExitError"
    stats = stack.asynchronous_invocations()["PollerFunction"]
    assert (stats["retried"], stats["sent_to_destination"]) == (0, 1)


def test_the_consumer_is_idempotent_under_lambdas_own_retries(stack: LocalStack) -> None:
    # Given the example consumer crashes right after its result write, for a few seconds
    crash = FaultRule(
        mode="crash_after",
        function="ResultConsumerFunction",
        service="dynamodb",
        operation="UpdateItem",
        until=time.time() + CRASH_WINDOW_SECONDS,
    )
    stack.set_faults([crash])
    before = stack.asynchronous_invocations()["ResultConsumerFunction"]

    # When a result event reaches it asynchronously, as its rule delivers it
    event = {
        "version": "0",
        "id": "5f1a0d3e-async-retry",
        "detail-type": "Task Result",
        "source": "pingback-guard",
        "detail": rendered_detail("4101", "SOLVED", TOKEN),
    }
    stack.invoke_async("ResultConsumerFunction", event)

    def done() -> bool:
        stats = stack.asynchronous_invocations()["ResultConsumerFunction"]
        return stats["succeeded"] > before["succeeded"] and stats["backlog"] == 0

    wait_until(done, timeout=120)
    stack.set_faults([])

    # Then Lambda ran it again after the crash, and the result was applied once
    stats = stack.asynchronous_invocations()["ResultConsumerFunction"]
    assert stats["retried"] > before["retried"]
    assert stats["retries_exhausted"] == before["retries_exhausted"]
    assert applied_counts(stack)[("4101", "SOLVED")] == 1
    assert received(stack, "ResultConsumerFailedQueue") == []
