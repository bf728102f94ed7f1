"""Figure 1: AWS requests per task on every path, from the real handlers under moto.

Also what the cost model needs from the same run: each handler's duration and log bytes per
invocation, the items as the handlers wrote them, and the metrics they emitted.
"""

from __future__ import annotations

import base64
import json
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.aws_counting import CallTally
from bench.cost import Invocation
from bench.events import (
    callback_event,
    get_task_event,
    push_connect_event,
    recaptcha_token,
    result_event,
    schedule_event,
    sqs_event,
    submit_event,
)
from bench.in_process import (
    BENCH_OVERRIDES,
    TABLE_NAME,
    InProcessStack,
    in_process_stack,
)
from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.output_capture import captured_stdout
from bench.provider import TYPICAL_TOKEN_BYTES, instant_simulator, res_requests
from infra.chaos.kind_mix import KIND_MIX
from infra.local.runtime.faults import FaultRule
from infra.simulator import Simulator
from infra.simulator.answers import SIM_TEXT_PREFIX
from pingback_guard.domain.task import MAX_ANSWER_BYTES
from pingback_guard.logic.poll_schedule import first_poll_delay

PATH_TASKS = 20
POLL_ROUNDS = 3
# The earliest first poll of a reCAPTCHA task the submit rule allows, with the bench's overrides.
FIRST_POLL_SECONDS = first_poll_delay(
    "userrecaptcha",
    expected_solve_seconds=float(BENCH_OVERRIDES["EXPECTED_SOLVE_SECONDS"]),
    callback_timeout_seconds=float(BENCH_OVERRIDES["CALLBACK_TIMEOUT_SECONDS"]),
)
DEAD_LETTER_TASKS = 4
EMPTY_SWEEPS = 5
SETUP = "setup"
TABLE_DOWN = FaultRule(mode="unavailable", service="dynamodb")
# An image whose answer is as long as the stack keeps (the simulator reads SIMTEXT: images).
LARGEST_ANSWER = (
    "image, answer at the 8 KB bound",
    1,
    {
        "method": "base64",
        "body": base64.b64encode(SIM_TEXT_PREFIX + b"x" * MAX_ANSWER_BYTES).decode(),
    },
)
PATH_DESCRIPTIONS = {
    "submit": "POST /tasks (in.php, then PENDING)",
    "callback_first": "callback, first delivery",
    "callback_duplicate": "callback, same result again",
    "get_task": "GET /tasks/{id}",
    "push_result": "push of a result to its owner's connection (SOLVED event)",
    "push_failed_result": "push of a result (FAILED event: the event says it all)",
    "dead_letter_callback": "callback while the table is down (to DLQ)",
    "dead_letter_replay": "replay of that DLQ message",
    "poll_recovery": "poller sweep recovering lost callbacks",
    "poller_empty": "poller sweep with nothing due (per sweep)",
}


@dataclass
class HandlerSamples:
    durations_ms: list[float] = field(default_factory=list)
    log_bytes: list[int] = field(default_factory=list)

    def median_invocation(self) -> Invocation:
        return Invocation(
            duration_ms=statistics.median(self.durations_ms),
            log_bytes=round(statistics.median(self.log_bytes)),
        )


@dataclass
class PathResult:
    name: str
    tasks: int
    tally: CallTally = field(default_factory=CallTally)
    handlers: dict[str, HandlerSamples] = field(default_factory=dict)
    res_requests: int = 0

    def per_task(self, count: float) -> float:
        return count / self.tasks

    @property
    def invocations(self) -> int:
        return sum(len(samples.durations_ms) for samples in self.handlers.values())


@dataclass(frozen=True)
class KindItems:
    """One task of a kind through the real submit, callback and GET handlers."""

    pending_item: dict[str, Any]
    solved_item: dict[str, Any]
    answer: str
    """The provider's answer, as the simulator made it for the kind."""
    exact: bool
    """GET /tasks/{id} served exactly that answer."""


@dataclass
class PathMeasurements:
    paths: dict[str, PathResult]
    pending_item: dict[str, Any]
    solved_item: dict[str, Any]
    dead_letter_message_bytes: int
    emitted_metrics: set[tuple[str, tuple[str, ...]]]
    kinds: dict[str, KindItems] = field(default_factory=dict)
    """Per kind of the chaos mix (infra/chaos/kind_mix.py): its items as the handlers wrote them."""


class PathRunner:
    """Invokes handlers as Lambda would, one event at a time, measuring each invocation."""

    def __init__(self, stack: InProcessStack, simulator: Simulator) -> None:
        self.stack = stack
        self.simulator = simulator
        self.paths: dict[str, PathResult] = {}
        self.outputs: list[str] = []
        self.tokens: dict[str, str] = {}

    def start(self, path: str, tasks: int) -> PathResult:
        self.paths[path] = PathResult(path, tasks)
        return self.paths[path]

    def invoke(self, path: str, handler: str, event: dict[str, Any]) -> Any:
        samples = self.paths[path].handlers.setdefault(handler, HandlerSamples())
        module = self.stack.handlers[handler]
        context = self.stack.context(handler)
        with self.stack.calls.window(path), captured_stdout() as output:
            started = time.perf_counter()
            answer = module.handler(event, context)
            elapsed = time.perf_counter() - started
        samples.durations_ms.append(elapsed * 1000)
        samples.log_bytes.append(output.size_bytes)
        self.outputs.append(output.text)
        return answer

    def submits(
        self, path: str, count: int, document: Mapping[str, Any] | None = None
    ) -> list[str]:
        task_ids = []
        for _ in range(count):
            answer = self.invoke(path, "submit", submit_event(document))
            _expect(answer["statusCode"] == 202, f"submit answered {answer['statusCode']}")
            task_ids.append(str(json.loads(answer["body"])["task_id"]))
        return task_ids

    def callbacks(self, path: str, task_ids: list[str]) -> None:
        pingback_urls = {str(task["id"]): task["pingback_url"] for task in self.simulator.tasks()}
        for task_id in task_ids:
            token = self.tokens.setdefault(task_id, recaptcha_token(TYPICAL_TOKEN_BYTES))
            # The task's own capability: the last part of the pingback URL submit sent in.php.
            capability = str(pingback_urls[task_id]).rsplit("/", 1)[-1]
            answer = self.invoke(path, "callback", callback_event(capability, task_id, token))
            _expect(answer["statusCode"] == 200, f"callback answered {answer['statusCode']}")

    def get_tasks(self, path: str, task_ids: list[str]) -> list[dict[str, Any]]:
        views = []
        for task_id in task_ids:
            answer = self.invoke(path, "get_task", get_task_event(task_id))
            view = json.loads(answer["body"])
            _expect(view.get("status") == "SOLVED", f"GET /tasks answered {answer['body'][:80]}")
            views.append(view)
        return views

    def sweep(self, path: str) -> dict[str, Any]:
        summary: dict[str, Any] = self.invoke(path, "poller", schedule_event())
        return summary

    def item(self, task_id: str) -> dict[str, Any]:
        """The item in DynamoDB's typed form ({"S": ...}), as a stream image carries it."""
        found: dict[str, Any] = self.stack.dynamodb.get_item(
            TableName=TABLE_NAME,
            Key={"task_id": {"S": task_id}},
            ConsistentRead=True,
        )["Item"]
        return found


def measure_paths() -> PathMeasurements:
    with (
        instant_simulator() as simulator,
        in_process_stack(simulator.base_url, simulator.api_key) as stack,
    ):
        runner = PathRunner(stack, simulator)
        runner.start(SETUP, 1)
        _empty_sweeps(runner)
        task_ids, pending_item = _submit_and_call_back(runner)
        solved_item = runner.item(task_ids[0])
        _push_path(runner, task_ids)
        kinds = _kind_items(runner)
        message_bytes = _dead_letter_path(runner)
        _poll_recovery_path(runner)
        for name, result in runner.paths.items():
            result.tally = stack.calls.tallies.get(name, CallTally())
        runner.paths.pop(SETUP)
        return PathMeasurements(
            paths=runner.paths,
            pending_item=pending_item,
            solved_item=solved_item,
            dead_letter_message_bytes=message_bytes,
            emitted_metrics=emitted_metrics(runner.outputs),
            kinds=kinds,
        )


def _empty_sweeps(runner: PathRunner) -> None:
    runner.start("poller_empty", EMPTY_SWEEPS)
    for _ in range(EMPTY_SWEEPS):
        _expect(runner.sweep("poller_empty")["due"] == 0, "an empty table had due tasks")


def _submit_and_call_back(runner: PathRunner) -> tuple[list[str], dict[str, Any]]:
    """Returns the task ids and one task's item as it was while PENDING."""
    for path in ("submit", "callback_first", "callback_duplicate", "get_task"):
        runner.start(path, PATH_TASKS)
    task_ids = runner.submits("submit", PATH_TASKS)
    pending_item = runner.item(task_ids[0])
    runner.callbacks("callback_first", task_ids)
    runner.callbacks("callback_duplicate", task_ids)
    runner.get_tasks("get_task", task_ids)
    return task_ids, pending_item


def _push_path(runner: PathRunner, task_ids: list[str]) -> None:
    """PushFunction on each solved task's result event, its owner connected (the post goes to
    moto's Management API); then on FAILED events, which say all a push needs."""
    runner.start("push_result", PATH_TASKS)
    runner.start("push_failed_result", PATH_TASKS)
    answer = runner.invoke(SETUP, "push", push_connect_event("bench-connection-1"))
    _expect(answer["statusCode"] == 200, f"$connect answered {answer}")
    for task_id in task_ids:
        runner.invoke("push_result", "push", result_event(runner.item(task_id)))
    for task_id in task_ids:
        failed = result_event(runner.item(task_id))
        failed["detail"].update(status="FAILED", error="ERROR_CAPTCHA_UNSOLVABLE", delivered_via="")
        runner.invoke("push_failed_result", "push", failed)


def _kind_items(runner: PathRunner) -> dict[str, KindItems]:
    """One task of each kind of the chaos mix, called back with the answer the simulator made
    for it (image text, a grid, GeeTest JSON, a cf_clearance ...), then read with GET."""
    found = {}
    for name, _share, document in [*KIND_MIX, LARGEST_ANSWER]:
        (task_id,) = runner.submits(SETUP, 1, document)
        pending = runner.item(task_id)
        answer = next(str(t["code"]) for t in runner.simulator.tasks() if str(t["id"]) == task_id)
        runner.tokens[task_id] = answer
        runner.callbacks(SETUP, [task_id])
        (view,) = runner.get_tasks(SETUP, [task_id])
        found[name] = KindItems(pending, runner.item(task_id), answer, view["solution"] == answer)
    return found


def _dead_letter_path(runner: PathRunner) -> int:
    """Callbacks while the table is down go to the DLQ; then each message is replayed alone."""
    runner.start("dead_letter_callback", DEAD_LETTER_TASKS)
    runner.start("dead_letter_replay", DEAD_LETTER_TASKS)
    task_ids = runner.submits(SETUP, DEAD_LETTER_TASKS)
    runner.stack.calls.hooks.set_rules((TABLE_DOWN,))
    try:
        runner.callbacks("dead_letter_callback", task_ids)
    finally:
        runner.stack.calls.hooks.set_rules(())
    messages = _receive_all(runner.stack, DEAD_LETTER_TASKS)
    for message in messages:
        answer = runner.invoke("dead_letter_replay", "replay", sqs_event([message]))
        _expect(answer == {"batchItemFailures": []}, f"replay answered {answer}")
    runner.get_tasks(SETUP, task_ids)
    return max(len(message["Body"].encode()) for message in messages)


def _poll_recovery_path(runner: PathRunner) -> None:
    """POLL_ROUNDS sweeps, each recovering PATH_TASKS callbacks that never came."""
    result = runner.start("poll_recovery", PATH_TASKS * POLL_ROUNDS)
    for _ in range(POLL_ROUNDS):
        runner.submits(SETUP, PATH_TASKS)
        time.sleep(FIRST_POLL_SECONDS + 0.2)
        before = res_requests(runner.simulator)
        summary = runner.sweep("poll_recovery")
        _expect(summary["recovered"] == PATH_TASKS, f"the sweep recovered {summary}")
        result.res_requests += res_requests(runner.simulator) - before


def _receive_all(stack: InProcessStack, expected: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for _ in range(20):
        if len(messages) >= expected:
            break
        answer = stack.sqs.receive_message(
            QueueUrl=stack.dead_letter_queue_url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages.extend(answer.get("Messages", []))
    _expect(len(messages) == expected, f"{len(messages)} of {expected} dead letters arrived")
    return messages


def emitted_metrics(outputs: list[str]) -> set[tuple[str, tuple[str, ...]]]:
    """Each CloudWatch metric the EMF documents created: name plus dimension=value pairs."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    for text in outputs:
        for line in text.splitlines():
            if '"_aws"' not in line:
                continue
            document = json.loads(line)
            for directive in document["_aws"]["CloudWatchMetrics"]:
                for dimensions in directive["Dimensions"]:
                    pairs = tuple(sorted(f"{name}={document[name]}" for name in dimensions))
                    found.update((metric["Name"], pairs) for metric in directive["Metrics"])
    return found


def _expect(condition: bool, problem: str) -> None:
    if not condition:
        raise RuntimeError(problem)


def table_paths_outcome(measured: PathMeasurements) -> SectionOutcome:
    rows = [_path_row(result) for result in measured.paths.values()]
    first = measured.paths["callback_first"]
    writes, reads = (
        first.per_task(first.tally.table_writes),
        first.per_task(first.tally.table_reads),
    )
    headlines = [
        Headline(
            "Callback, first delivery: table writes / reads per task",
            f"{number(writes)} / {number(reads)}",
            "1 / 0",
            writes == 1 and reads == 0,
        ),
        _summary_headline(measured, "callback_duplicate", "Duplicate callback"),
        _dead_letter_headline(measured),
        _poll_headline(measured),
        _push_headline(measured),
    ]
    return SectionOutcome(
        key="table_requests",
        title="1. Table requests per task on each path (boto3 layer, real handlers, moto)",
        data={name: _path_json(result) for name, result in measured.paths.items()},
        headlines=headlines,
        details=markdown_table(
            [
                "path",
                "tasks",
                "invocations / task",
                "table writes / task",
                "table reads / task",
                "of which Query",
                "other AWS calls / task",
                "res.php / task",
            ],
            rows,
        ),
    )


def _path_row(result: PathResult) -> list[str]:
    tally = result.tally
    others = {key: n for key, n in tally.by_kind().items() if not key.startswith("dynamodb.")}
    other_text = ", ".join(f"{key} {number(result.per_task(n))}" for key, n in others.items())
    failed = sum(tally.by_kind(answered=False).values())
    writes = number(result.per_task(tally.table_writes))
    if failed:
        writes += f" (all {number(result.per_task(failed))} unanswered: table down)"
    return [
        PATH_DESCRIPTIONS.get(result.name, result.name),
        str(result.tasks),
        number(result.per_task(result.invocations)),
        writes,
        number(result.per_task(tally.table_reads)),
        number(result.per_task(tally.table_queries)),
        other_text or "0",
        number(result.per_task(result.res_requests)),
    ]


def _summary_headline(measured: PathMeasurements, path: str, label: str) -> Headline:
    result = measured.paths[path]
    return Headline(
        f"{label}: table writes / reads per task",
        f"{number(result.per_task(result.tally.table_writes))}"
        f" / {number(result.per_task(result.tally.table_reads))}",
    )


def _dead_letter_headline(measured: PathMeasurements) -> Headline:
    callback = measured.paths["dead_letter_callback"]
    replay = measured.paths["dead_letter_replay"]
    sends = callback.tally.count("sqs", frozenset({"SendMessage"}))
    return Headline(
        "DLQ path: SQS sends per task, then replay writes / reads per task",
        f"{number(callback.per_task(sends))}, then"
        f" {number(replay.per_task(replay.tally.table_writes))}"
        f" / {number(replay.per_task(replay.tally.table_reads))}",
    )


def _poll_headline(measured: PathMeasurements) -> Headline:
    result = measured.paths["poll_recovery"]
    return Headline(
        f"Poll recovery ({PATH_TASKS} lost callbacks per sweep):"
        " Query / writes / other reads per task",
        f"{number(result.per_task(result.tally.table_queries))}"
        f" / {number(result.per_task(result.tally.table_writes))}"
        f" / {number(result.per_task(result.tally.table_reads - result.tally.table_queries))}",
    )


PUSH_READS_TARGET = 1


def _push_headline(measured: PathMeasurements) -> Headline:
    reads = [
        measured.paths[path].per_task(measured.paths[path].tally.table_reads)
        for path in ("push_result", "push_failed_result")
    ]
    return Headline(
        "Push of a result (SOLVED / FAILED event): table reads per result",
        " / ".join(number(value) for value in reads),
        f"<= {PUSH_READS_TARGET}",
        max(reads) <= PUSH_READS_TARGET,
    )


def _path_json(result: PathResult) -> dict[str, Any]:
    return {
        "description": PATH_DESCRIPTIONS.get(result.name, result.name),
        "tasks": result.tasks,
        "invocations": result.invocations,
        "table_writes_per_task": result.per_task(result.tally.table_writes),
        "table_reads_per_task": result.per_task(result.tally.table_reads),
        "table_queries_per_task": result.per_task(result.tally.table_queries),
        "res_requests_per_task": result.per_task(result.res_requests),
        "aws_calls": result.tally.to_json(),
        "handlers": {
            name: {
                "median_ms": round(statistics.median(samples.durations_ms), 3),
                "median_log_bytes": statistics.median(samples.log_bytes),
                "invocations": len(samples.durations_ms),
            }
            for name, samples in result.handlers.items()
        },
    }
