"""Figure 2: items the poller reads per due task, on a table that is mostly finished tasks.

The items are clones of ones DynamoDbTaskStore itself wrote (so the attribute layout is the
deployed one), bulk-loaded with BatchWriteItem. One sweep of the real store's due_tasks (a Query
per shard of the sparse DueIndex) is compared with a Scan-based poller on the same table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
from moto import mock_aws

from bench.aws_counting import CallTally, CallWindows
from bench.cost import DAYS_PER_MONTH, MILLION, PRICES
from bench.events import recaptcha_token, submit_event
from bench.item_size import eventual_read_units, index_entry_size, item_size
from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.provider import TYPICAL_TOKEN_BYTES
from bench.template_facts import index_attributes, new_task_store, template_facts
from infra.moto_atomic import make_dynamodb_writes_atomic
from infra.project_template import parameter_default, project_template
from pingback_guard.data.due_index import due_shard_of
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    NewTask,
    TaskResult,
)
from pingback_guard.settings.poller import MAX_IDS_PER_RES_REQUEST

REGION = "us-east-1"
TABLE_NAME = "pingback-guard-bench-poller"
FINISHED_TASKS = 20_000
DUE_TASKS = 100
FAILED_EVERY = 20
BATCH_WRITE_SIZE = 25
FINISHED_ID_BASE = 71_000_000_000
DUE_ID_BASE = 72_000_000_000
TASKS_PER_MONTH = MILLION


@dataclass(frozen=True)
class ItemLayouts:
    """One item of each kind, exactly as the store wrote it."""

    solved: dict[str, Any]
    failed: dict[str, Any]
    pending: dict[str, Any]


@dataclass(frozen=True)
class SweepReads:
    requests: int
    items_read: int
    due_found: int
    read_units: float


def measure_poller_reads() -> SectionOutcome:
    make_dynamodb_writes_atomic()
    facts = template_facts(project_template())
    with mock_aws():
        client = boto3.session.Session(region_name=REGION).client("dynamodb")
        store = new_task_store(client, TABLE_NAME)
        now = time.time()
        layouts = _item_layouts(store, client, now)
        table_bytes = _fill_table(client, layouts, now, facts.due_shards)
        calls = CallWindows()
        calls.hooks.attach(client.meta.events)
        with calls.window("query") as query_tally:
            due = store.due_tasks(now, limit=_sweep_limit())
        with calls.window("scan") as scan_tally:
            scanned_due = scan_for_due(client, now)
    entry_bytes = index_entry_size(
        layouts.pending, index_attributes(project_template(), "DueIndex")
    )
    query = SweepReads(
        requests=len(query_tally.scanned_counts),
        items_read=sum(query_tally.scanned_counts),
        due_found=len(due),
        read_units=_query_read_units(query_tally, entry_bytes),
    )
    scan = SweepReads(
        requests=len(scan_tally.scanned_counts),
        items_read=sum(scan_tally.scanned_counts),
        due_found=len(scanned_due),
        read_units=eventual_read_units(table_bytes),
    )
    steady_items = TASKS_PER_MONTH * facts.result_ttl_days / DAYS_PER_MONTH
    steady_scan_units = eventual_read_units(
        round(table_bytes / (FINISHED_TASKS + DUE_TASKS) * steady_items)
    )
    outcome = _outcome(query, scan, facts.sweeps_per_month, layouts)
    outcome.details.append("")
    outcome.details.append(
        f"At {TASKS_PER_MONTH:,} tasks/month the {facts.result_ttl_days}-day TTL keeps about"
        f" {steady_items:,.0f} items in the table: a Scan-based poller would read"
        f" {steady_scan_units:,.0f} units per sweep,"
        f" USD {_monthly(steady_scan_units, facts.sweeps_per_month):,.0f}/month at 1 sweep/min;"
        " the DueIndex sweep stays at its per-shard minimum."
    )
    outcome.data["scan_at_steady_state"] = {
        "tasks_per_month": TASKS_PER_MONTH,
        "items": round(steady_items),
        "read_units_per_sweep": steady_scan_units,
    }
    return outcome


def _sweep_limit() -> int:
    """What one poller invocation asks for with the template's defaults and ids= batching."""
    return (
        int(parameter_default(project_template(), "PollerMaxRequestsPerSweep"))
        * MAX_IDS_PER_RES_REQUEST
    )


def _item_layouts(store: DynamoDbTaskStore, client: Any, now: float) -> ItemLayouts:
    body = submit_event()["body"]
    request = CaptchaRequest(
        "userrecaptcha",
        {"googlekey": _field(body, "sitekey"), "pageurl": _field(body, "page_url")},
    )
    ids = ("1", "2", "3")
    for task_id in ids:
        store.record_submission(NewTask(task_id, request, now - 600, first_poll_at=now - 30))
    token = recaptcha_token(TYPICAL_TOKEN_BYTES)
    store.record_result(TaskResult("1", token, DeliveryPath.CALLBACK, now - 570))
    store.record_failure(
        TaskResult("2", "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.CALLBACK, now - 570)
    )
    items = [_take_item(client, task_id) for task_id in ids]
    return ItemLayouts(solved=items[0], failed=items[1], pending=items[2])


def _field(json_body: str, name: str) -> str:
    return str(json.loads(json_body)[name])


def _take_item(client: Any, task_id: str) -> dict[str, Any]:
    """Read an item and remove it, so only the clones are in the table."""
    key = {"task_id": {"S": task_id}}
    item: dict[str, Any] = client.get_item(TableName=TABLE_NAME, Key=key, ConsistentRead=True)[
        "Item"
    ]
    client.delete_item(TableName=TABLE_NAME, Key=key)
    return item


def _fill_table(client: Any, layouts: ItemLayouts, now: float, shards: int) -> int:
    """Writes the finished and due tasks; returns the bytes of every item in the table."""
    total_bytes = 0
    batch: list[dict[str, Any]] = []
    for item in _table_items(layouts, now, shards):
        total_bytes += item_size(item)
        batch.append({"PutRequest": {"Item": item}})
        if len(batch) == BATCH_WRITE_SIZE:
            _write_batch(client, batch)
            batch = []
    if batch:
        _write_batch(client, batch)
    return total_bytes


def _table_items(layouts: ItemLayouts, now: float, shards: int) -> Iterator[dict[str, Any]]:
    for number_ in range(FINISHED_TASKS):
        layout = layouts.failed if number_ % FAILED_EVERY == 0 else layouts.solved
        yield {**layout, "task_id": {"S": str(FINISHED_ID_BASE + number_)}}
    for number_ in range(DUE_TASKS):
        task_id = str(DUE_ID_BASE + number_)
        yield {
            **layouts.pending,
            "task_id": {"S": task_id},
            "due_shard": {"S": due_shard_of(task_id, shards)},
            "due_at": {"N": repr(round(now - 1 - number_ * 0.25, 3))},
        }


def _write_batch(client: Any, batch: list[dict[str, Any]]) -> None:
    pending: dict[str, Any] = {TABLE_NAME: batch}
    while pending:
        pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def scan_for_due(client: Any, now: float) -> list[dict[str, Any]]:
    """How a poller without the sparse index finds due tasks: Scan the table, filter."""
    request: dict[str, Any] = {
        "TableName": TABLE_NAME,
        "FilterExpression": "#status = :pending AND due_at <= :now",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {":pending": {"S": "PENDING"}, ":now": {"N": repr(now)}},
    }
    found: list[dict[str, Any]] = []
    while True:
        page = client.scan(**request)
        found.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return found
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _query_read_units(tally: CallTally, entry_bytes: int) -> float:
    """Each Query answer is rounded up to half a unit per started 4 KB of index entries."""
    return sum(eventual_read_units(scanned * entry_bytes) for scanned in tally.scanned_counts)


def _outcome(
    query: SweepReads, scan: SweepReads, sweeps_per_month: float, layouts: ItemLayouts
) -> SectionOutcome:
    query_ratio = query.items_read / DUE_TASKS
    scan_ratio = scan.items_read / DUE_TASKS
    rows = [
        _row("DueIndex Query per shard (deployed)", query, sweeps_per_month),
        _row("Scan + FilterExpression (no index)", scan, sweeps_per_month),
    ]
    return SectionOutcome(
        key="poller_reads",
        title=(
            f"2. Poller reads: {FINISHED_TASKS:,} finished + {DUE_TASKS} due PENDING tasks,"
            " one sweep"
        ),
        data={
            "finished_tasks": FINISHED_TASKS,
            "due_tasks": DUE_TASKS,
            "query": query.__dict__,
            "scan": scan.__dict__,
            "item_bytes": {
                "solved": item_size(layouts.solved),
                "failed": item_size(layouts.failed),
                "pending": item_size(layouts.pending),
            },
        },
        headlines=[
            Headline(
                "Poller sweep: items read / due task (DueIndex Query)",
                number(query_ratio),
                "1.0",
                query.due_found == DUE_TASKS and abs(query_ratio - 1.0) < 1e-9,
            ),
            Headline("Scan-based poller, same table: items scanned / due task", number(scan_ratio)),
        ],
        details=markdown_table(
            [
                "poller",
                "requests",
                "items read",
                "due found",
                "items read / due task",
                "read units / sweep",
                "USD / month at 1 sweep/min",
            ],
            rows,
        ),
    )


def _monthly(read_units_per_sweep: float, sweeps_per_month: float) -> float:
    return read_units_per_sweep * sweeps_per_month * PRICES.dynamodb_read_units_per_million / 1e6


def _row(name: str, reads: SweepReads, sweeps_per_month: float) -> list[str]:
    monthly = _monthly(reads.read_units, sweeps_per_month)
    return [
        name,
        str(reads.requests),
        f"{reads.items_read:,}",
        str(reads.due_found),
        number(reads.items_read / DUE_TASKS),
        number(reads.read_units, 1),
        f"{monthly:.2f}",
    ]
