"""The verdict of a run, read from the table, the queues, the simulator's truth and the calls the
functions made: never from the runner's own counters."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from infra.chaos.kind_mix import KIND_OF_METHOD
from infra.chaos.verdicts import CheckVerdict
from infra.chaos.workload import is_forged_code

# Keys of items that are not tasks (pingback_guard.data.dynamodb.NON_TASK_KEY_PREFIX): the
# poller's lease, one item per pingback URL.
NON_TASK_KEY_PREFIX = "#"

# The store's result writes (pingback_guard.data.dynamodb), told apart by their expressions:
# tests/integration/test_chaos_write_markers.py runs them against the real store.
RESULT_WRITE_MARKERS = ("solution = :code", "#status = :failed")
PROVISIONAL_CONDITION = "attribute_not_exists(#status)"
CONDITION_REFUSED = "ConditionalCheckFailedException"
TABLE_WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem", "BatchWriteItem"})


@dataclass
class Verdict(CheckVerdict):
    tasks: int = 0
    solved_at_provider: int = 0
    failed_at_provider: int = 0
    stored_solved: int = 0
    stored_failed: int = 0
    lost: list[str] = field(default_factory=list)
    wrong_code: list[str] = field(default_factory=list)
    unknown_in_table: list[str] = field(default_factory=list)
    still_pending: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    written_more_than_once: list[str] = field(default_factory=list)
    dead_letter_left: int = 0
    parked: int = 0
    forged_accepted: int = 0
    failures_explained: dict[str, dict[str, Any]] = field(default_factory=dict)
    """For each lost or wrong-code task, what its item says (never a code or a token)."""

    FAILURES = (
        "lost",
        "wrong_code",
        "unknown_in_table",
        "still_pending",
        "written_more_than_once",
        "dead_letter_left",
        "parked",
        "forged_accepted",
    )


def verdict(
    truth: Sequence[Mapping[str, Any]],
    table: Mapping[str, Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    queue_depths: Mapping[str, int],
) -> Verdict:
    result = Verdict(tasks=len(truth))
    writes = result_writes_per_task(calls)
    known = {str(task["id"]) for task in truth}
    for task in truth:
        _judge_task(result, task, table.get(str(task["id"])), writes.get(str(task["id"]), 0))
    result.failures_explained = explain_failures(
        truth, table, [*result.lost, *result.wrong_code], writes
    )
    forged_ids = set(forged_provisional(truth, table))
    result.unknown_in_table = sorted(set(table) - known - forged_ids)
    result.dead_letter_left = queue_depths.get("dead_letter", 0)
    result.parked = queue_depths.get("parking", 0)
    return result


def _judge_task(
    result: Verdict, task: Mapping[str, Any], item: Mapping[str, Any] | None, writes: int
) -> None:
    task_id = str(task["id"])
    solved = task["outcome"] == "solved"
    result.solved_at_provider += int(solved)
    result.failed_at_provider += int(not solved)
    status = item.get("status") if item else None
    if writes > 1:
        result.written_more_than_once.append(task_id)
    if status == "PENDING":
        result.still_pending.append(task_id)
    if status == "EXPIRED":
        result.expired.append(task_id)
    if solved:
        if status != "SOLVED":
            result.lost.append(task_id)
        elif item is not None and item.get("solution") != task["code"]:
            result.wrong_code.append(task_id)
        else:
            result.stored_solved += 1
    elif status == "FAILED" and item is not None and item.get("error") == task["code"]:
        result.stored_failed += 1
    elif status != "FAILED":
        result.lost.append(task_id)
    else:
        result.wrong_code.append(task_id)


def explain_failures(
    truth: Sequence[Mapping[str, Any]],
    table: Mapping[str, Mapping[str, Any]],
    task_ids: Sequence[str],
    writes: Mapping[str, int],
) -> dict[str, dict[str, Any]]:
    """What the table holds for each failed task, enough to tell the paths apart, and when each
    step happened, in seconds after the provider accepted the task."""
    owners_of_code = {str(task["code"]): str(task["id"]) for task in truth}
    by_id = {str(task["id"]): task for task in truth}
    explained: dict[str, dict[str, Any]] = {}
    for task_id in task_ids:
        item = table.get(task_id) or {}
        code = item.get("solution") or item.get("error")
        explained[task_id] = {
            "status": item.get("status"),
            "delivered_via": item.get("delivered_via"),
            "registered": "submitted_at" in item,
            "has_nonce": "nonce" in item,
            "error": item.get("error"),
            "result_writes": writes.get(task_id, 0),
            "code_is": _whose_code(code, owners_of_code),
            "poll_attempts": _whole(item.get("poll_attempts")),
            "seconds_after_provider_submit": _timeline(by_id.get(task_id, {}), item),
        }
    return explained


def _whole(value: object) -> int | None:
    """A number the table holds (a Decimal after deserializing), as JSON can carry it."""
    return None if value is None else int(str(value))


def _timeline(task: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, float | None]:
    """Registered (the stack's submit time), finished (the provider's truth), last checked (the
    last "not ready"), result (when the stack stored it)."""
    accepted = task.get("submitted_at")

    def after(moment: object) -> float | None:
        if accepted is None or moment is None:
            return None
        return round(float(str(moment)) - float(accepted), 1)

    return {
        "registered": after(item.get("submitted_at")),
        "finished": after(task.get("finished_at")),
        "last_checked": after(item.get("last_checked_at")),
        "result": after(item.get("received_at")),
    }


def _whose_code(code: object, owners_of_code: Mapping[str, str]) -> str:
    if code is None:
        return "none"
    if is_forged_code(code):
        return "forged"
    owner = owners_of_code.get(str(code))
    return "unknown" if owner is None else f"task {owner}'s"


def forged_decisions(
    truth: Sequence[Mapping[str, Any]], table: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Provider tasks whose stored result is the attacker's: what "accepted" means."""
    return [
        str(task["id"]) for task in truth if _holds_forged_code(table.get(str(task["id"])) or {})
    ]


def forged_provisional(
    truth: Sequence[Mapping[str, Any]], table: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Ids no task ever had, holding the attacker's code: kept provisionally (short TTL),
    visible to no worker, discarded if a task with another nonce ever registers the id."""
    known = {str(task["id"]) for task in truth}
    return sorted(
        task_id
        for task_id, item in table.items()
        if task_id not in known and "submitted_at" not in item and _holds_forged_code(item)
    )


def _holds_forged_code(item: Mapping[str, Any]) -> bool:
    return is_forged_code(item.get("solution")) or is_forged_code(item.get("error"))


def result_writes_per_task(calls: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Successful conditional writes that stored a solution or a failure, per task.

    Provisional writes (a pingback for an id not registered yet, SET nonce) are left out: the
    attacker's are discarded when the real task registers, and a genuine one is the task's only
    result write (its own later pingbacks are refused as duplicates).
    """
    counts: Counter[str] = Counter()
    for call in calls:
        if _is_result_write(call) and call.get("outcome") == "ok" and not _is_provisional(call):
            counts.update(call.get("task_ids") or [])
    return counts


def _is_provisional(call: Mapping[str, Any]) -> bool:
    """Kept for an id no task holds yet: only where no item exists (a registered task's
    pingback write sets its nonce too, under other conditions)."""
    return "nonce = :nonce" in (call.get("update_expression") or "") and (
        call.get("condition_expression") == PROVISIONAL_CONDITION
    )


def _is_result_write(call: Mapping[str, Any]) -> bool:
    expression = call.get("update_expression") or ""
    return call.get("operation") == "UpdateItem" and any(
        m in expression for m in RESULT_WRITE_MARKERS
    )


def figures(
    truth: Sequence[Mapping[str, Any]],
    table: Mapping[str, Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    simulator_stats: Mapping[str, Mapping[str, int]],
    emitted: Mapping[str, float],
) -> dict[str, Any]:
    """The report's numbers: paths, delays, token ages, request and write costs per task."""
    finished_at = {str(task["id"]): float(task["finished_at"]) for task in truth}
    by_path: Counter[str] = Counter()
    delays: dict[str, list[float]] = {}
    for task_id, item in table.items():
        via = str(item.get("delivered_via") or item.get("status", "?").lower())
        by_path[via] += 1
        if item.get("status") == "SOLVED" and task_id in finished_at and "received_at" in item:
            delays.setdefault(via, []).append(float(item["received_at"]) - finished_at[task_id])
    all_delays = [d for path in delays.values() for d in path]
    tasks = max(len(truth), 1)
    table_calls = [c for c in calls if c.get("service") == "dynamodb"]
    ok_writes = [
        c for c in table_calls if c.get("operation") in TABLE_WRITES and c.get("outcome") == "ok"
    ]
    return {
        "stored_by_path": dict(by_path),
        "duplicates_absorbed": sum(
            1 for c in calls if _is_result_write(c) and c.get("outcome") == CONDITION_REFUSED
        ),
        "conflicts": int(
            emitted.get("CallbackConflict", 0)
            + emitted.get("ReplayConflict", 0)
            + emitted.get("PollConflict", 0)
        ),
        "answered_503": int(emitted.get("CallbackUnavailable", 0)),
        "sent_to_dead_letter_queue": int(emitted.get("CallbackToDeadLetter", 0)),
        "recovery_delay_seconds": percentiles(all_delays),
        "recovery_delay_seconds_by_path": {path: percentiles(v) for path, v in delays.items()},
        "token_age_at_poll_recovery_seconds": percentiles(delays.get("poll", [])),
        "res_php_requests_per_task": round(simulator_stats["res"]["requests"] / tasks, 3),
        "table_requests_per_task": round(len(table_calls) / tasks, 3),
        "table_writes_per_task": round(len(ok_writes) / tasks, 3),
        "table_requests_per_task_by_call": table_requests_by_call(table_calls, tasks),
        "metrics_emitted": dict(sorted(emitted.items())),
    }


def table_requests_by_call(calls: Sequence[Mapping[str, Any]], tasks: int) -> dict[str, float]:
    """Per task, by function and operation (failed calls too: they load the table as well),
    most first: where the table requests per task come from."""
    counts = Counter(f"{call.get('function')} {call.get('operation')}" for call in calls)
    return {name: round(count / tasks, 3) for name, count in counts.most_common()}


def percentiles(values: Sequence[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    p95 = (
        statistics.quantiles(ordered, n=20, method="inclusive")[18]
        if len(ordered) > 1
        else ordered[0]
    )
    return {
        "count": len(ordered),
        "p50": round(statistics.median(ordered), 2),
        "p95": round(p95, 2),
        "max": round(ordered[-1], 2),
    }


def table_items(pages: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Scan pages -> items by task id (the checker may Scan: it is not the product)."""
    deserializer = TypeDeserializer()
    items: dict[str, dict[str, Any]] = {}
    for page in pages:
        for raw in page.get("Items", []):
            item = {k: deserializer.deserialize(v) for k, v in raw.items()}
            if not str(item["task_id"]).startswith(NON_TASK_KEY_PREFIX):
                items[str(item["task_id"])] = item
    return items


def emitted_metrics(log_dir: Path) -> dict[str, float]:
    """Sum of every EMF metric the functions printed (Powertools Metrics) during the run."""
    totals: Counter[str] = Counter()
    for path in sorted(log_dir.glob("*")):
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                _add_emf(totals, line)
    return {name: float(value) for name, value in totals.items()}


def _add_emf(totals: Counter[str], line: str) -> None:
    start = line.find('{"_aws"')
    if start < 0:
        return
    try:
        document = json.loads(line[start:])
        definitions = document["_aws"]["CloudWatchMetrics"][0]["Metrics"]
    except (ValueError, KeyError, IndexError, TypeError):
        return
    for definition in definitions:
        value = document.get(definition["Name"], 0)
        if definition.get("Unit", "Count") == "Count":
            totals[definition["Name"]] += sum(value) if isinstance(value, list) else value


def unanswered_submits(
    truth: Sequence[Mapping[str, Any]],
    table: Mapping[str, Mapping[str, Any]],
    accepted: Iterable[str],
) -> dict[str, Any]:
    """Provider tasks whose id no worker learned (its submit got no answer in time, or a 5xx
    without an id), and what the stack made of them: they are judged like every other task."""
    learned = set(accepted)
    statuses: Counter[str] = Counter()
    for task in truth:
        task_id = str(task["id"])
        if task_id not in learned:
            item = table.get(task_id)
            statuses[str(item.get("status")) if item else "absent"] += 1
    return {"tasks": sum(statuses.values()), "status_in_table": dict(sorted(statuses.items()))}


def throughput(
    truth: Sequence[Mapping[str, Any]], first_submit: float | None, last_submit: float | None
) -> dict[str, float]:
    """Sustained rates: provider tasks per second of the submit window, and pingbacks the stack
    answered (any HTTP status) per second of the window they were sent in."""
    rates: dict[str, float] = {}
    if first_submit is not None and last_submit is not None and last_submit > first_submit:
        window = last_submit - first_submit
        rates["submit_window_seconds"] = round(window, 1)
        rates["submits_per_second"] = round(len(truth) / window, 1)
    answered = sorted(
        float(attempt["at"])
        for task in truth
        for attempt in task.get("deliveries", [])
        if isinstance(attempt.get("outcome"), int)
    )
    if len(answered) > 1 and answered[-1] > answered[0]:
        rates["callback_window_seconds"] = round(answered[-1] - answered[0], 1)
        rates["callbacks_per_second"] = round(len(answered) / (answered[-1] - answered[0]), 1)
    return rates


def figures_by_kind(
    truth: Sequence[Mapping[str, Any]],
    lost: Sequence[str],
    wrong: Sequence[str],
    had_at: Mapping[str, float | None],
) -> dict[str, dict[str, Any]]:
    """Per kind: tasks, lost, wrong, and the answer's age when a waiting worker had it."""
    lost_ids, wrong_ids = set(lost), set(wrong)
    by_kind: dict[str, dict[str, Any]] = {}
    ages: dict[str, list[float]] = {}
    for task in truth:
        task_id = str(task["id"])
        kind = KIND_OF_METHOD.get(str(task.get("method")), str(task.get("method")))
        row = by_kind.setdefault(kind, {"tasks": 0, "lost": 0, "wrong": 0})
        row["tasks"] += 1
        row["lost"] += int(task_id in lost_ids)
        row["wrong"] += int(task_id in wrong_ids)
        moment = had_at.get(task_id)
        if moment is not None and task.get("outcome") == "solved":
            ages.setdefault(kind, []).append(moment - float(task["finished_at"]))
    for kind, row in by_kind.items():
        row["token_age_at_worker_seconds"] = percentiles(ages.get(kind, []))
    return dict(sorted(by_kind.items()))
