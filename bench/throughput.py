"""Figure 5: callbacks per second through the local stack ÷ raw conditional writes per second.

Both loads run against the same moto server the local stack started, from CLIENT_THREADS
threads on loopback for DURATION_SECONDS each. A callback for a task the table does not know
is stored like any other (first result wins), so every callback is one new conditional write,
the same write the raw load makes: the ratio is what the gateway, the worker hop and the
handler cost on top of the write itself. The two loads alternate in ROUNDS slices, so a busy
spell of the machine slows both alike.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import requests
from botocore.config import Config

from bench.events import recaptcha_token
from bench.outcome import (
    NOT_MEASURED,
    Headline,
    SectionOutcome,
    markdown_table,
    number,
    one_line,
)
from bench.provider import TYPICAL_TOKEN_BYTES, instant_simulator

ROOT = Path(__file__).resolve().parent.parent
DURATION_SECONDS = 10.0
ROUNDS = 4
CLIENT_THREADS = 4
WARMUP_SECONDS = 2.0
FIRST_TASK_ID = 75_000_000_000
REQUEST_TIMEOUT_SECONDS = 10.0

Operation = Callable[[str], bool]


@dataclass(frozen=True)
class LoadResult:
    completed: int
    failed: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.completed / self.seconds

    def __add__(self, other: LoadResult) -> LoadResult:
        return LoadResult(
            self.completed + other.completed,
            self.failed + other.failed,
            self.seconds + other.seconds,
        )


class TaskIds:
    """Fresh task ids shared by every load thread."""

    def __init__(self, first: int) -> None:
        self._numbers = itertools.count(first)
        self._lock = threading.Lock()

    def next(self) -> str:
        with self._lock:
            return str(next(self._numbers))


def run_load(new_operation: Callable[[], Operation], ids: TaskIds, seconds: float) -> LoadResult:
    """CLIENT_THREADS threads, each with its own client, calling until the time is up."""
    completed, failed = [0] * CLIENT_THREADS, [0] * CLIENT_THREADS
    start_line = threading.Barrier(CLIENT_THREADS + 1)
    deadline = [0.0]

    def work(slot: int) -> None:
        operation = new_operation()
        start_line.wait()
        while time.monotonic() < deadline[0]:
            if operation(ids.next()):
                completed[slot] += 1
            else:
                failed[slot] += 1

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(CLIENT_THREADS)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    deadline[0] = started + seconds
    start_line.wait()
    for thread in threads:
        thread.join()
    return LoadResult(sum(completed), sum(failed), time.monotonic() - started)


def callback_operation(api_url: str, secret: str, token: str) -> Operation:
    session = requests.Session()
    url = f"{api_url}/callback/{secret}"

    def call_back(task_id: str) -> bool:
        try:
            answer = session.get(
                url, params={"id": task_id, "code": token}, timeout=REQUEST_TIMEOUT_SECONDS
            )
        except requests.RequestException:
            return False
        return answer.status_code == 200

    return call_back


def conditional_write_operation(endpoint_url: str, table: str, token: str) -> Operation:
    """The callback's own write, straight to moto: first solution wins."""
    client = _local_session().client(
        "dynamodb",
        endpoint_url=endpoint_url,
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )

    def write(task_id: str) -> bool:
        try:
            client.update_item(
                TableName=table,
                Key={"task_id": {"S": task_id}},
                UpdateExpression="SET solution = :code, #status = :solved, received_at = :now,"
                " delivered_via = :via",
                ConditionExpression="attribute_not_exists(solution)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":code": {"S": token},
                    ":solved": {"S": "SOLVED"},
                    ":now": {"N": repr(time.time())},
                    ":via": {"S": "callback"},
                },
            )
        except Exception:
            return False
        return True

    return write


def measure_throughput() -> SectionOutcome:
    title = "5. Local stack throughput: callbacks/s through the gateway ÷ raw conditional writes/s"
    try:
        from infra.local import LocalOptions, LocalStack
    except ImportError as error:
        return _not_measured(title, f"infra.local has no LocalStack yet ({error})")
    token = recaptcha_token(TYPICAL_TOKEN_BYTES)
    with (
        instant_simulator() as simulator,
        tempfile.TemporaryDirectory(prefix="pingback-guard-bench-") as run_dir,
    ):
        options = LocalOptions(
            template=ROOT / "template.yaml",
            provider_url=simulator.base_url,
            provider_api_key=simulator.api_key,
            run_dir=Path(run_dir),
        )
        stack = LocalStack(options)
        try:
            ready = stack.start()
        except Exception as error:
            return _not_measured(title, f"the local stack did not start: {one_line(error)}")
        try:
            return _measure_against(ready, token, options.workers_per_function, title)
        finally:
            stack.stop()


def _measure_against(ready: Any, token: str, workers: int, title: str) -> SectionOutcome:
    secret = _callback_secret(ready.aws_endpoint_url, ready.outputs["CallbackSecretArn"])
    ids = TaskIds(FIRST_TASK_ID)

    def new_callback() -> Operation:
        return callback_operation(ready.api_url, secret, token)

    def new_write() -> Operation:
        return conditional_write_operation(ready.aws_endpoint_url, ready.tasks_table, token)

    run_load(new_callback, ids, WARMUP_SECONDS)
    callbacks = writes = LoadResult(0, 0, 0.0)
    for _ in range(ROUNDS):
        callbacks += run_load(new_callback, ids, DURATION_SECONDS / ROUNDS)
        writes += run_load(new_write, ids, DURATION_SECONDS / ROUNDS)
    stored = _stored_items(ready.aws_endpoint_url, ready.tasks_table)
    return _outcome(title, callbacks, writes, stored, workers)


def _local_session() -> boto3.session.Session:
    return boto3.session.Session(
        region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def _callback_secret(endpoint_url: str, secret_id: str) -> str:
    secrets = _local_session().client("secretsmanager", endpoint_url=endpoint_url)
    document = secrets.get_secret_value(SecretId=secret_id)
    return str(json.loads(document["SecretString"])["current"])


def _stored_items(endpoint_url: str, table: str) -> int:
    client = _local_session().client("dynamodb", endpoint_url=endpoint_url)
    total = 0
    request: dict[str, Any] = {"TableName": table, "Select": "COUNT"}
    while True:
        page = client.scan(**request)
        total += page["Count"]
        if "LastEvaluatedKey" not in page:
            return total
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _outcome(
    title: str, callbacks: LoadResult, writes: LoadResult, stored: int, workers: int
) -> SectionOutcome:
    ratio = callbacks.per_second / writes.per_second
    rows = [
        [
            "callbacks through the local gateway (GET /callback/{secret})",
            f"{callbacks.completed:,}",
            str(callbacks.failed),
            number(callbacks.per_second, 1),
        ],
        [
            "conditional UpdateItem straight to moto",
            f"{writes.completed:,}",
            str(writes.failed),
            number(writes.per_second, 1),
        ],
    ]
    return SectionOutcome(
        key="throughput",
        title=title,
        data={
            "callbacks": {**callbacks.__dict__, "per_second": callbacks.per_second},
            "raw_writes": {**writes.__dict__, "per_second": writes.per_second},
            "ratio": ratio,
            "items_in_table_after": stored,
            "client_threads": CLIENT_THREADS,
            "workers_per_function": workers,
        },
        headlines=[
            Headline(
                "Local stack: callbacks/s ÷ raw conditional writes/s (same moto)",
                f"{ratio:.2f} ({number(callbacks.per_second, 1)} ÷ {number(writes.per_second, 1)})",
            )
        ],
        details=[
            f"{CLIENT_THREADS} client threads, {number(DURATION_SECONDS)} s each in {ROUNDS}"
            " alternating slices, loopback;"
            f" {workers} worker processes per function; items in the table afterwards: {stored:,}.",
            "",
            *markdown_table(["load", "completed", "failed", "per second"], rows),
        ],
    )


def _not_measured(title: str, reason: str) -> SectionOutcome:
    return SectionOutcome(
        key="throughput",
        title=title,
        status=NOT_MEASURED,
        note=reason,
        headlines=[Headline("Local stack: callbacks/s ÷ raw conditional writes/s", "not measured")],
    )
