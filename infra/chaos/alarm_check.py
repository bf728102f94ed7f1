"""Do the alarms report the faults? Injects the faults only an alarm can show, waits for every
alarm to clear, and judges the local CloudWatch's history against the fault windows.

Each fault names the alarm (by logical id) that must be in ALARM between its start and its end
plus the alarm's own detection time; every alarm must be out of ALARM at the end; a clean run (no
faults at all) must raise none.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.chaos.async_faults import failure_queue
from infra.chaos.scenario import AlarmFaults, Scenario
from infra.chaos.verdicts import CheckVerdict
from infra.local import LocalStack, ReadyInfo
from infra.simulator import Simulator

ALARM = "ALARM"
OK = "OK"
FIRST_SWEEP_ALARM = "PollerNotRunningAlarm"
SETTLE_POLL_SECONDS = 1.0
EXPIRY_CHECK_SECONDS = 1.0
EXPIRY_PATIENCE_SECONDS = 45.0
EXPIRED_TASK_ID = "990000000000000001"
PARKED_MESSAGE_BODY = "not a dead letter: replay can never apply this"
# An alarm fires at the end of a bucket, and is evaluated a few times per bucket.
DETECTION_MARGIN_BUCKETS = 2


@dataclass(frozen=True)
class ExpectedAlarm:
    fault: str
    start: float
    end: float | None
    """None: until the end of the run (a parked message takes MaxReceiveCount receives)."""
    alarm: str
    """The alarm's logical id in template.yaml."""


def expected_alarms(scenario: Scenario) -> list[ExpectedAlarm]:
    """Every injected fault and the alarm that must report it."""
    windows = [
        ("gateway down", scenario.gateway_down, "PollRecoveredAlarm"),
        ("table down", scenario.table_down, "ReplayFailedAlarm"),
        ("DLQ down", scenario.dead_letter_down, "CallbackUnavailableAlarm"),
    ]
    found = [
        ExpectedAlarm(name, window.start, window.end, alarm)
        for name, window, alarm in windows
        if window.length > 0
    ]
    faults = scenario.alarm_faults
    if faults is not None:
        expired = faults.expired_task
        found += [
            ExpectedAlarm(
                "parked message", faults.parked_message_at, None, "ParkingQueueDepthAlarm"
            ),
            ExpectedAlarm("expired task", expired.start, expired.end, "TaskExpiredAlarm"),
            ExpectedAlarm(
                "poller stopped",
                faults.poller_stopped.start,
                faults.poller_stopped.end,
                "PollerNotRunningAlarm",
            ),
            ExpectedAlarm(
                "account error",
                faults.account_error.start,
                faults.account_error.end,
                "ProviderAccountErrorAlarm",
            ),
        ]
        if faults.first_account_down.length > 0:
            found.append(
                ExpectedAlarm(
                    "first account down",
                    faults.first_account_down.start,
                    faults.first_account_down.end,
                    "ProviderThreadsBusyAlarm",
                )
            )
    if scenario.async_faults is not None:
        found += [
            ExpectedAlarm(fault, window.start, window.end, failure_queue(function).alarm)
            for fault, window, function in scenario.async_faults.windows()
        ]
    return found


class AlarmFaultInjector:
    """Plays a scenario's AlarmFaults on the running stack and simulator, then cleans up what
    an operator would (the parked message, the expired task's row) once their alarm fired."""

    def __init__(
        self, faults: AlarmFaults, stack: LocalStack, simulator: Simulator, retention: float
    ) -> None:
        self._faults = faults
        self._stack = stack
        self._simulator = simulator
        self._retention = retention
        info = stack.ready
        self._sqs = info.aws_client("sqs")
        self._dynamodb = info.aws_client("dynamodb")
        self.notes: list[tuple[float, str]] = []

    def run(self, started: float, stop: threading.Event) -> None:
        faults = self._faults
        expiry = threading.Thread(target=self._expire_stale_task, args=(started, stop))
        expiry.start()
        steps: list[tuple[float, str, Callable[[], None]]] = [
            (faults.parked_message_at, "parked message sent", self._send_poison),
            (faults.poller_stopped.start, "poller stopped", lambda: self._schedules(False)),
            (faults.poller_stopped.end, "poller back", lambda: self._schedules(True)),
            (faults.account_error.start, "account error", lambda: self._balance(False)),
            (faults.account_error.end, "account back", lambda: self._balance(True)),
        ]
        if faults.first_account_down.length > 0:
            steps += [
                (faults.first_account_down.start, "first account down", self._first_down),
                (faults.first_account_down.end, "first account back", self._first_back),
            ]
        try:
            for at, what, action in sorted(steps, key=lambda step: step[0]):
                if stop.wait(max(0.0, started + at - time.time())):
                    return
                action()
                self.notes.append((round(time.time() - started, 2), what))
        finally:
            expiry.join()
            self._schedules(True)
            self._balance(True)
            self._first_back()

    def _expire_stale_task(self, started: float, stop: threading.Event) -> None:
        """Register the stale task and fail res.php until a sweep expired it (at most a while:
        on a busy machine a sweep can take longer than the planned window)."""
        if stop.wait(max(0.0, started + self._faults.expired_task.start - time.time())):
            return
        self._register_stale_task()
        self._res_failing(True)
        self.notes.append((round(time.time() - started, 2), "expired task registered, res.php 5xx"))
        patience = max(self._faults.expired_task.length, EXPIRY_PATIENCE_SECONDS)
        deadline = time.time() + patience
        try:
            while time.time() < deadline and not stop.wait(EXPIRY_CHECK_SECONDS):
                if self._stale_task_status() == "EXPIRED":
                    break
        finally:
            self._res_failing(False)
            self.notes.append((round(time.time() - started, 2), "res.php back"))

    def _stale_task_status(self) -> str | None:
        item = self._dynamodb.get_item(
            TableName=self._stack.ready.tasks_table,
            Key={"task_id": {"S": EXPIRED_TASK_ID}},
            ConsistentRead=True,
        ).get("Item", {})
        status = item.get("status", {}).get("S")
        return str(status) if status is not None else None

    def clean_up(self, info: ReadyInfo) -> None:
        """What the runbook says to do once the alarm fired: drop the unreplayable message,
        forget the synthetic task (neither is a real result)."""
        sqs = info.aws_client("sqs")
        for _ in range(5):
            messages = sqs.receive_message(
                QueueUrl=info.parking_queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            ).get("Messages", [])
            for message in messages:
                if message["Body"] == PARKED_MESSAGE_BODY:
                    sqs.delete_message(
                        QueueUrl=info.parking_queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
                else:
                    sqs.change_message_visibility(
                        QueueUrl=info.parking_queue_url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=0,
                    )
            if not messages:
                break
        info.aws_client("dynamodb").delete_item(
            TableName=info.tasks_table, Key={"task_id": {"S": EXPIRED_TASK_ID}}
        )

    def _send_poison(self) -> None:
        self._sqs.send_message(QueueUrl=self._stack.ready.dlq_url, MessageBody=PARKED_MESSAGE_BODY)

    def _register_stale_task(self) -> None:
        """A PENDING registration (as submit leaves it when the table is down) for a task whose
        retention is already over: the next sweep that gets no answer for it expires it."""
        now = time.time()
        body = {
            "kind": "submission",
            "task_id": EXPIRED_TASK_ID,
            "request": {
                "method": "userrecaptcha",
                "sitekey": "6Le-alarm-check-sitekey",
                "page_url": "https://example.com/alarm-check",
                "extras": {},
            },
            "submitted_at": now - self._retention - 5,
            "first_poll_at": now,
            "reason": f"alarm check {uuid.uuid4()}",
        }
        self._sqs.send_message(QueueUrl=self._stack.ready.dlq_url, MessageBody=json.dumps(body))

    def _res_failing(self, failing: bool) -> None:
        rate = 1.0 if failing else float(self._baseline_res_5xx())
        self._simulator.update_faults(res_5xx_rate=rate)

    def _baseline_res_5xx(self) -> Any:
        return self._simulator.config.faults.res_5xx_rate

    def _schedules(self, enabled: bool) -> None:
        self._stack.set_schedules(enabled)

    def _balance(self, funded: bool) -> None:
        self._simulator.update_faults(zero_balance=not funded)

    def _first_down(self) -> None:
        self._simulator.update_faults(zero_balance_accounts=[0])

    def _first_back(self) -> None:
        self._simulator.update_faults(zero_balance_accounts=[])


def settle_alarms(
    stack: LocalStack, timeout: float, ready_to_clean: Callable[[Mapping[str, Any]], bool]
) -> None:
    """Wait (at most `timeout`) until no alarm is in ALARM; `ready_to_clean` is called with the
    alarm report on each round until it returns True (then cleanup has happened)."""
    deadline = time.time() + timeout
    cleaned = False
    while time.time() < deadline:
        report = stack.alarms()
        if not cleaned:
            cleaned = ready_to_clean(report)
        if cleaned and ALARM not in report["states"].values():
            return
        time.sleep(SETTLE_POLL_SECONDS)


def settle_seconds(report: Mapping[str, Any], time_scale: float) -> float:
    """Long enough for the slowest alarm to see two full windows of good data."""
    longest = max(
        (spec["period"] * spec["evaluation_periods"] for spec in report["alarms"].values()),
        default=60,
    )
    return 2 * longest / time_scale + 10


@dataclass
class AlarmVerdict(CheckVerdict):
    raised: list[dict[str, Any]] = field(default_factory=list)
    """Per injected fault: the alarm expected, and when it fired (None: it did not)."""
    not_raised: list[str] = field(default_factory=list)
    still_in_alarm: list[str] = field(default_factory=list)
    fired_in_clean_run: list[str] = field(default_factory=list)
    intervals: dict[str, list[list[float | None]]] = field(default_factory=dict)
    """Per alarm (logical id): [fired, cleared] in seconds since the run started."""
    notifications: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    """Every state change, its time in seconds since the run started, and CloudWatch's reason."""

    FAILURES = ("not_raised", "still_in_alarm", "fired_in_clean_run")


def alarm_intervals(
    history: Sequence[Mapping[str, Any]], started: float
) -> dict[str, list[list[float | None]]]:
    """[fired, cleared] per alarm logical id, in seconds since `started` (cleared None: never)."""
    intervals: dict[str, list[list[float | None]]] = {}
    for change in history:
        at = round(float(change["at"]) - started, 2)
        logical_id = str(change["logical_id"])
        if change["new_state"] == ALARM:
            intervals.setdefault(logical_id, []).append([at, None])
        elif change["old_state"] == ALARM and intervals.get(logical_id):
            intervals[logical_id][-1][1] = at
    return intervals


def judge_alarms(
    scenario: Scenario, report: Mapping[str, Any], started: float, notifications: int
) -> AlarmVerdict:
    intervals = alarm_intervals(report["history"], started)
    specs = {spec["logical_id"]: spec for spec in report["alarms"].values()}
    history = [
        {**change, "at": round(float(change["at"]) - started, 2)} for change in report["history"]
    ]
    verdict = AlarmVerdict(intervals=intervals, notifications=notifications, history=history)
    expected = expected_alarms(scenario)
    for fault in expected:
        fired = _first_firing(fault, intervals.get(fault.alarm, []), specs, scenario.time_scale)
        verdict.raised.append(
            {
                "fault": fault.fault,
                "alarm": fault.alarm,
                "start": fault.start,
                "end": fault.end,
                "fired_at": fired,
            }
        )
        if fired is None:
            verdict.not_raised.append(f"{fault.fault}: {fault.alarm}")
    names = {name: spec["logical_id"] for name, spec in report["alarms"].items()}
    verdict.still_in_alarm = sorted(
        names[name] for name, state in report["states"].items() if state == ALARM
    )
    if is_clean(scenario):
        verdict.fired_in_clean_run = sorted(
            logical_id
            for logical_id, spans in intervals.items()
            if any(fired is not None and fired >= 0 for fired, _ in spans)
        )
    return verdict


def is_clean(scenario: Scenario) -> bool:
    """No fault injected: the run must raise no alarm."""
    return scenario.alarm_faults is None and not expected_alarms(scenario)


def wait_until_up(stack: LocalStack, timeout: float) -> bool:
    """Wait (at most `timeout`) until the stack's first scheduled sweep has been counted and no
    alarm is in ALARM. PollerNotRunningAlarm reads missing data as breaching (template.yaml, as
    CloudWatch does), so a new stack whose first sweep is slow to complete on a loaded machine
    raises it before anything else ran; a clean run is judged from a stack that is up, as an
    operator reads a deployment once it has settled."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        report = stack.alarms()
        states = {
            report["alarms"][name]["logical_id"]: state for name, state in report["states"].items()
        }
        if states.get(FIRST_SWEEP_ALARM) == OK and ALARM not in states.values():
            return True
        time.sleep(SETTLE_POLL_SECONDS)
    return False


def _first_firing(
    fault: ExpectedAlarm,
    spans: Sequence[Sequence[float | None]],
    specs: Mapping[str, Mapping[str, Any]],
    time_scale: float,
) -> float | None:
    """When the alarm fired, if it was in ALARM at some moment between the fault's start and its
    end plus the alarm's detection time (its window and two more buckets)."""
    spec = specs.get(fault.alarm)
    if spec is None:
        return None
    buckets = spec["evaluation_periods"] + DETECTION_MARGIN_BUCKETS
    latest = None if fault.end is None else fault.end + spec["period"] * buckets / time_scale
    for fired_at, cleared_at in spans:
        if fired_at is None or (latest is not None and fired_at > latest):
            continue
        if cleared_at is None or cleared_at >= fault.start:
            return fired_at
    return None


def count_notifications(info: ReadyInfo, queue_url: str) -> int:
    """Alarm notifications that reached the SQS queue subscribed to the stack's alarm topic."""
    sqs = info.aws_client("sqs")
    count = 0
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not messages:
            return count
        count += len(messages)
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                for index, message in enumerate(messages)
            ],
        )


def subscribe_queue_to_alarms(info: ReadyInfo) -> str | None:
    """An SQS queue subscribed to the alarm topic (as an operator's pager would be)."""
    topic_arn = info.outputs.get("AlarmTopicArn")
    if not topic_arn:
        return None
    sqs = info.aws_client("sqs")
    queue_url: str = sqs.create_queue(QueueName=f"{info.stack_name}-alarm-inbox")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    info.aws_client("sns").subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    return queue_url
