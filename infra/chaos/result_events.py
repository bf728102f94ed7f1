"""The chaos run's check of the result events: every final result published at least once (the
bus's log) and applied exactly once by the example consumer (the consumer's own applied-results
table), although the pipe publishes some batches twice."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from infra.chaos.verdicts import CheckVerdict
from infra.local import LocalStack, ReadyInfo

# Share of pipe batches put on the bus a second time: the consumer must absorb them.
EVENT_DUPLICATE_RATE = 0.25
APPLIED_TABLE = "ResultConsumerAppliedTable"
FINAL_STATUSES = frozenset({"SOLVED", "FAILED", "EXPIRED"})
# The consumer is waited for while deliveries end: on a loaded machine it can run minutes behind
# the table. The bus's backlog alone is no measure of that: a pipe still reading its stream keeps
# it as long as the consumers shorten it (the 10,000-task soak was judged with 4,474 results still
# to apply while the consumer worked on). Deliveries that have not moved for this long are judged
# as they stand; it covers Lambda's asynchronous retries, 1 and 2 minutes later in real seconds.
_STALL_SECONDS = 200.0
_SETTLED_CHECKS = 3

ResultKey = tuple[str, str]


@dataclass
class ResultEventsVerdict(CheckVerdict):
    final_results: int = 0
    published_results: int = 0
    events_published: int = 0
    applied_once: int = 0
    # Re-runs the Idempotency utility let through (its record was not saved after the effect)
    # that the consumer's conditional effect refused.
    repeats_refused: int = 0
    not_published: list[str] = field(default_factory=list)
    not_applied: list[str] = field(default_factory=list)
    applied_more_than_once: list[str] = field(default_factory=list)
    applied_without_event: list[str] = field(default_factory=list)
    # Results of ids no worker registered (kept provisionally, maybe forged): never published.
    published_unregistered: list[str] = field(default_factory=list)

    FAILURES = (
        "not_published",
        "not_applied",
        "applied_more_than_once",
        "applied_without_event",
        "published_unregistered",
    )


class ResultEventsProgress(Protocol):
    def result_events_settled(self) -> bool: ...

    def result_events_finished(self) -> int: ...


def wait_for_result_events(
    stack: ResultEventsProgress,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> None:
    """Until the pipes have read their streams to the end and the bus delivered everything, for
    as long as the deliveries make progress."""
    settled = 0
    finished, progressed_at = stack.result_events_finished(), clock()
    while settled < _SETTLED_CHECKS and clock() - progressed_at < _STALL_SECONDS:
        if stack.result_events_finished() > finished:
            finished, progressed_at = stack.result_events_finished(), clock()
        settled = settled + 1 if stack.result_events_settled() else 0
        sleep(0.5)


def result_events_report(
    stack: LocalStack, info: ReadyInfo, items: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    published = [event["detail"] for event in stack.published_events()]
    records = applied_records(info)
    verdict = judge_result_events(items, published, applied_counts(records))
    verdict.repeats_refused = sum(
        int(item.get("repeats_refused", {}).get("N", 0)) for item in records
    )
    return verdict.to_json()


def judge_result_events(
    items: Mapping[str, Mapping[str, Any]],
    published: Iterable[Mapping[str, Any]],
    applied: Mapping[ResultKey, int],
) -> ResultEventsVerdict:
    registered = {task_id for task_id, item in items.items() if "submitted_at" in item}
    finals = {
        (task_id, str(items[task_id]["status"]))
        for task_id in registered
        if items[task_id].get("status") in FINAL_STATUSES
    }
    events = Counter((str(d.get("task_id")), str(d.get("status"))) for d in published)
    # A task can have had two final results (EXPIRED, then SOLVED): each is one to apply.
    results = finals | set(events)
    verdict = ResultEventsVerdict(
        final_results=len(finals),
        published_results=len(set(events)),
        events_published=sum(events.values()),
    )
    verdict.not_published = _named(finals - set(events))
    verdict.not_applied = _named(key for key in results if applied.get(key, 0) == 0)
    verdict.applied_more_than_once = _named(key for key in results if applied.get(key, 0) > 1)
    verdict.applied_without_event = _named(set(applied) - set(events))
    # An id gone from the table (the operator removed the synthetic task) cannot be judged.
    verdict.published_unregistered = _named(
        key for key in events if key[0] in items and key[0] not in registered
    )
    verdict.applied_once = sum(1 for key in results if applied.get(key, 0) == 1)
    return verdict


def applied_records(info: ReadyInfo) -> list[dict[str, Any]]:
    """The example consumer's own record of the results it applied."""
    resource = info.resources.get(APPLIED_TABLE)
    if resource is None:
        return []
    pages = (
        info.aws_client("dynamodb")
        .get_paginator("scan")
        .paginate(TableName=resource["physical_id"])
    )
    return [item for page in pages for item in page.get("Items", [])]


def applied_counts(records: Iterable[Mapping[str, Any]]) -> dict[ResultKey, int]:
    """Applications per (task id, final status)."""
    return {
        (item["task_id"]["S"], item["status"]["S"]): int(item["applied_count"]["N"])
        for item in records
    }


def summary_line(report: Mapping[str, Any] | None) -> str:
    if report is None:
        return "  result events: not checked"
    return (
        f"  result events: {report['final_results']} final results, {report['published_results']}"
        f" published ({report['events_published']} events, duplicates injected), applied once"
        f" {report['applied_once']}; not published {len(report['not_published'])}, not applied"
        f" {len(report['not_applied'])}, applied twice {len(report['applied_more_than_once'])},"
        f" published for unregistered ids {len(report['published_unregistered'])};"
        f" repeats refused by the consumer's conditional effect {report.get('repeats_refused', 0)}"
    )


def _named(keys: Iterable[ResultKey]) -> list[str]:
    return sorted(f"{task_id}:{status}" for task_id, status in keys)
