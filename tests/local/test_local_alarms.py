"""The project's alarms, evaluated by the local runtime, fire and clear on the local time scale
and reach the stack's SNS topic in moto."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.chaos.alarm_check import subscribe_queue_to_alarms
from infra.local import LocalOptions, LocalStack
from infra.local.lambda_.pool import Invocation
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.long_running, pytest.mark.timeout(400)]

PROJECT_TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
TIME_SCALE = 12


def _state(stack: LocalStack, logical_id: str) -> str:
    report = stack.alarms()
    (name,) = [n for n, spec in report["alarms"].items() if spec["logical_id"] == logical_id]
    return str(report["states"][name])


def _period(stack: LocalStack, logical_id: str) -> float:
    (spec,) = [s for s in stack.alarms()["alarms"].values() if s["logical_id"] == logical_id]
    return float(spec["period"])


@contextmanager
def _invoked_meanwhile(
    stack: LocalStack, logical_id: str
) -> Iterator[list[tuple[float, Invocation]]]:
    """Invokes the function with an event of no start of its own, one after the other, while
    the block runs: the (completion time, invocation) of each."""
    completed: list[tuple[float, Invocation]] = []
    stop = threading.Event()

    def invoke() -> None:
        while not stop.is_set():
            invocation = stack.invoke(logical_id, {})
            completed.append((time.time(), invocation))

    invoker = threading.Thread(target=invoke, name="invoked-meanwhile")
    invoker.start()
    try:
        yield completed
    finally:
        stop.set()
        invoker.join(timeout=120)


def _notifications(stack: LocalStack, queue_url: str) -> list[dict[str, Any]]:
    sqs = stack.ready.aws_client("sqs")
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(json.loads(message["Body"])["Message"]) for message in messages]


def test_poller_stopped_fires_its_alarm_to_the_topic_and_clears_when_it_runs_again(
    tmp_path: Path,
) -> None:
    options = LocalOptions(
        template=PROJECT_TEMPLATE,
        provider_api_key="alarm-test-key",
        run_dir=tmp_path,
        time_scale=TIME_SCALE,
        workers_per_function=1,
        stack_name="alarms",
    )
    with LocalStack(options) as stack:
        inbox = subscribe_queue_to_alarms(stack.ready)
        assert inbox is not None
        assert len(stack.alarms()["alarms"]) >= 28
        # Given the poller runs every nominal minute (5 s here), its alarm is OK.
        wait_until(lambda: _state(stack, "PollerNotRunningAlarm") == "OK", timeout=90)
        # When its schedule is disabled, the alarm fires after four sweep periods, though
        # invocations of other starts (an operator's here; a submit's wake alike) keep completing.
        stack.set_schedules(False)
        with _invoked_meanwhile(stack, "PollerFunction") as completed:
            wait_until(lambda: _state(stack, "PollerNotRunningAlarm") == "ALARM", timeout=60)
        assert completed and all(invocation.ok for _at, invocation in completed)
        assert {invocation.result["start"] for _at, invocation in completed} == {"ALONE"}
        local_period = _period(stack, "PollerNotRunningAlarm") / TIME_SCALE
        times = [at for at, _invocation in completed]
        assert max(later - at for at, later in itertools.pairwise(times)) < local_period
        # Then the alarm topic carries CloudWatch's notification.
        received: list[dict[str, Any]] = []

        def poller_alarm_received() -> list[dict[str, Any]]:
            received.extend(_notifications(stack, inbox))
            return [
                n
                for n in received
                if n["AlarmName"].endswith("-poller-not-running") and n["NewStateValue"] == "ALARM"
            ]

        fired = wait_until(poller_alarm_received, timeout=15)
        assert fired[0]["OldStateValue"] == "OK"
        assert "LessThanThreshold" in fired[0]["NewStateReason"]
        # And it clears once the schedule runs again.
        stack.set_schedules(True)
        wait_until(lambda: _state(stack, "PollerNotRunningAlarm") == "OK", timeout=60)
        control = requests.get(f"{stack.ready.control_url}/_local/alarms", timeout=10).json()
        changes = [c for c in control["history"] if c["logical_id"] == "PollerNotRunningAlarm"]
        assert [c["new_state"] for c in changes][-2:] == ["ALARM", "OK"]
