"""Asynchronous failures a chaos run injects (issue 41), and the operator who answers their alarms.

Lambda runs the result consumer, the forwarder and the poller asynchronously (rule targets, the
schedule, the submit's wake): a failed event is retried MaximumRetryAttempts times and then its
record goes to the function's failure queue, whose alarm fires (infra/local/lambda_/
async_invocations.py). The faults, each in a window of the run:
- the example consumer crashing right after its result write (``crash_after``): Lambda's
  retries run it again, and its idempotency must apply nothing twice;
- the forwarder's target down: the workers' own pingback receiver (a loopback server here, fed
  by in.php submits with ``pingback=``) answers 503;
- the poller failing: every invocation, woken by a submit or scheduled, crashes.
The operator follows docs/operations.md once a failure queue's alarm fired: the consumer's kept
events are fed to it again once every fault is over (their ``requestPayload``), the forwarder's
and the poller's records are read and deleted (the results are in the table; the next sweep
covers a lost one). The queue empties, and the alarm clears.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

from infra.chaos.kind_mix import PAGE_URL, SITEKEY
from infra.chaos.scenario import AsyncFaults
from infra.local import FaultRule, LocalStack, ReadyInfo
from infra.local.runtime.aws import OTHER_WORKER
from infra.local.up import issue_compat_key

CONSUMER = "ResultConsumerFunction"
FORWARDER = "PingbackForwardFunction"
POLLER = "PollerFunction"


@dataclass(frozen=True)
class FailureQueue:
    function: str
    queue: str
    """The queue's logical id (its on-failure destination)."""
    alarm: str
    redrive: bool
    """Feed the kept events to the function again (else: read and delete them)."""


FAILURE_QUEUES = (
    FailureQueue(CONSUMER, "ResultConsumerFailedQueue", "ResultConsumerFailedAlarm", True),
    FailureQueue(FORWARDER, "PingbackForwardFailedQueue", "PingbackForwardFailedAlarm", False),
    FailureQueue(POLLER, "PollerFailedEventsQueue", "PollerFailedEventsAlarm", False),
)
_OPERATOR_EVERY_SECONDS = 1.0
_SUBMIT_TIMEOUT_SECONDS = 30.0
# in.php's "busy" for a key whose threads are all in use, in CaptchaAI's dialect and 2captcha's
# (functions/pingback_guard/logic/dialects.py): nothing was sent, the submit may be sent again.
_BUSY_ANSWERS = frozenset({"ERROR_ZERO_BALANCE", "ERROR_NO_SLOT_AVAILABLE"})
_BUSY_PAUSE_SECONDS = 2.0
_BUSY_PATIENCE_SECONDS = 30.0


def failure_queue(function: str) -> FailureQueue:
    return next(queue for queue in FAILURE_QUEUES if queue.function == function)


def fault_rules(faults: AsyncFaults, at: float, started: float) -> list[FaultRule]:
    """The rules of the faults that have begun by `at` (each ends by its own `until`)."""
    rules: list[FaultRule] = []
    if at >= faults.consumer_crash.start:
        rules.append(
            FaultRule(
                mode="crash_after",
                function=CONSUMER,
                service="dynamodb",
                operation="UpdateItem",
                until=started + faults.consumer_crash.end,
            )
        )
    if at >= faults.poller_failing.start:
        rules.append(
            FaultRule(mode="crash", function=POLLER, until=started + faults.poller_failing.end)
        )
    return rules


def timeline_events(
    faults: AsyncFaults, target: PingbackTarget
) -> list[tuple[float, str, Callable[[], None]]]:
    """(at, what, action) for the runner's fault timeline; the rules follow from fault_rules."""
    return [
        (faults.consumer_crash.start, "result consumer crashing", lambda: None),
        (faults.consumer_crash.end, "result consumer back", lambda: None),
        (faults.forward_target_down.start, "forward target down", lambda: target.set_up(False)),
        (faults.forward_target_down.end, "forward target up", lambda: target.set_up(True)),
        (faults.poller_failing.start, "poller failing", lambda: None),
        (faults.poller_failing.end, "poller back", lambda: None),
    ]


class PingbackTarget:
    """A worker's own pingback receiver on loopback: 200 and the result kept while up, 503
    while down."""

    def __init__(self) -> None:
        self._up = threading.Event()
        self._up.set()
        self._lock = threading.Lock()
        self.received: Counter[str] = Counter()
        self.refused = 0
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                target._answer(self, self.path.partition("?")[2])

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                target._answer(self, self.rfile.read(length).decode(errors="replace"))

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/captcha-done"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def set_up(self, up: bool) -> None:
        if up:
            self._up.set()
        else:
            self._up.clear()

    def _answer(self, handler: BaseHTTPRequestHandler, form: str) -> None:
        fields = dict(part.partition("=")[::2] for part in form.split("&") if part)
        with self._lock:
            if self._up.is_set():
                self.received[fields.get("id", "?")] += 1
            else:
                self.refused += 1
        handler.send_response(200 if self._up.is_set() else 503)
        handler.send_header("content-length", "0")
        handler.end_headers()


@dataclass
class ForwardedSubmits:
    """in.php submits with ``pingback=`` (the forwarder's work), spread over the run's start."""

    accepted: list[str] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)

    def run(
        self, info: ReadyInfo, faults: AsyncFaults, target_url: str, started: float, stop: Any
    ) -> None:
        key = issue_compat_key(info, OTHER_WORKER.user_arn, "chaos forwarded tasks")
        every = faults.forwarded_over_seconds / max(faults.forwarded_tasks, 1)
        for number in range(faults.forwarded_tasks):
            if stop.wait(max(0.0, started + number * every - time.time())):
                return
            self._submit(info.api_url, key, target_url)

    def _submit(self, api_url: str, key: str, target_url: str) -> None:
        """Sent again while the key's answer is "busy" (every provider thread in use), as
        CaptchaAI's SDK does after reading threadsinfo; any other refusal is counted."""
        give_up = time.monotonic() + _BUSY_PATIENCE_SECONDS
        while self._submitted_once(api_url, key, target_url) and time.monotonic() < give_up:
            time.sleep(_BUSY_PAUSE_SECONDS)

    def _submitted_once(self, api_url: str, key: str, target_url: str) -> bool:
        """One in.php submit; True when the answer was "busy" and nothing was sent."""
        form = {
            "key": key,
            "method": "userrecaptcha",
            "googlekey": SITEKEY,
            "pageurl": PAGE_URL,
            "pingback": target_url,
            "json": "1",
        }
        try:
            answer = requests.post(f"{api_url}/in.php", data=form, timeout=_SUBMIT_TIMEOUT_SECONDS)
            document = answer.json()
        except (requests.RequestException, ValueError) as error:
            self.refused[type(error).__name__] += 1
            return False
        if document.get("status") == 1:
            self.accepted.append(str(document["request"]))
            return False
        if document.get("request") in _BUSY_ANSWERS:
            return True
        self.refused[str(document.get("request"))] += 1
        return False


@dataclass
class _QueueTally:
    records: Counter[str] = field(default_factory=Counter)
    """By requestContext.condition."""
    redriven: int = 0
    deleted: int = 0


class FailureQueueOperator:
    """Answers the failure-queue alarms as docs/operations.md says, once they fired."""

    def __init__(self, stack: LocalStack, faults_end: float, started: float) -> None:
        self._stack = stack
        self._redrive_after = started + faults_end
        self._sqs = stack.ready.aws_client("sqs")
        self._urls = {
            queue.queue: stack.ready.resources[queue.queue]["physical_id"]
            for queue in FAILURE_QUEUES
            if queue.queue in stack.ready.resources
        }
        self.tallies = {queue.queue: _QueueTally() for queue in FAILURE_QUEUES}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(_OPERATOR_EVERY_SECONDS):
            self.answer_alarms()

    def answer_alarms(self, every_queue: bool = False) -> None:
        """Work off each failure queue whose alarm is in ALARM (`every_queue`: all of them, as
        the run ends)."""
        report = self._stack.alarms()
        names = {name: spec["logical_id"] for name, spec in report["alarms"].items()}
        in_alarm = {names[name] for name, state in report["states"].items() if state == "ALARM"}
        for queue in FAILURE_QUEUES:
            if (every_queue or queue.alarm in in_alarm) and queue.queue in self._urls:
                self._work_off(queue)

    def _work_off(self, queue: FailureQueue) -> None:
        if queue.redrive and time.time() < self._redrive_after:
            return  # "fix the consumer, then feed the kept events to it again"
        url = self._urls[queue.queue]
        tally = self.tallies[queue.queue]
        for message in self._messages(url):
            record = json.loads(message["Body"])
            tally.records[str(record.get("requestContext", {}).get("condition"))] += 1
            if queue.redrive:
                self._stack.invoke_async(queue.function, record["requestPayload"])
                tally.redriven += 1
            else:
                tally.deleted += 1
            self._sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def _messages(self, url: str) -> Iterator[dict[str, Any]]:
        while True:
            messages = self._sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages", [])
            if not messages:
                return
            yield from messages


def async_report(
    stack: LocalStack,
    operator: FailureQueueOperator,
    target: PingbackTarget,
    submits: ForwardedSubmits,
) -> dict[str, Any]:
    """Per function Lambda's asynchronous figures, per failure queue what it kept and what the
    operator did, and what the forward target got."""
    invocations = stack.asynchronous_invocations()
    functions = {queue.function for queue in FAILURE_QUEUES}
    return {
        "functions": {name: invocations[name] for name in sorted(functions & set(invocations))},
        "failure_queues": {
            name: {
                "records": dict(tally.records),
                "redriven": tally.redriven,
                "deleted": tally.deleted,
            }
            for name, tally in operator.tallies.items()
        },
        "forwarded": {
            "submitted": len(submits.accepted),
            "submit_refusals": dict(submits.refused),
            "received_by_target": len(set(submits.accepted) & set(target.received)),
            "refused_while_down": target.refused,
        },
    }


class AsyncFaultRun:
    """The asynchronous faults of one chaos run: the target, the forwarded submits, the
    operator; `finish` once the alarms cleared, before the result events are judged."""

    def __init__(self, faults: AsyncFaults, stack: LocalStack, faults_end: float) -> None:
        self.faults = faults
        self._stack = stack
        self._faults_end = faults_end
        self.target = PingbackTarget()
        self.submits = ForwardedSubmits()
        self._operator: FailureQueueOperator | None = None
        self._threads: list[threading.Thread] = []

    def start(self, started: float, stop: threading.Event) -> None:
        self.target.start()
        self._operator = FailureQueueOperator(self._stack, self._faults_end, started)
        self._threads = [
            threading.Thread(
                target=self.submits.run,
                args=(self._stack.ready, self.faults, self.target.url, started, stop),
            ),
            threading.Thread(target=self._operator.run),
        ]
        for thread in self._threads:
            thread.start()

    def events(self) -> list[tuple[float, str, Callable[[], None]]]:
        return timeline_events(self.faults, self.target)

    def rules_at(self, at: float, started: float) -> list[FaultRule]:
        return fault_rules(self.faults, at, started)

    def finish(self) -> dict[str, Any]:
        assert self._operator is not None
        self._operator.stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self._operator.answer_alarms(every_queue=True)
        report = async_report(self._stack, self._operator, self.target, self.submits)
        self.close()
        return report

    def close(self) -> None:
        if self._operator is not None:
            self._operator.stop.set()
        if self._threads:
            self.target.stop()
            self._threads = []
