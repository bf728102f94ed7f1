"""Figure 5: the cost model fed with what figure 1 measured (requests, durations, log bytes,
the items the handlers wrote) and with what template.yaml declares."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from bench import FUNCTIONS_DIR
from bench.cost import (
    ASSUMPTIONS,
    MILLION,
    PRICES,
    BusyPoller,
    FixedInputs,
    Invocation,
    PathUsages,
    Usage,
    access_log_line_bytes,
    busy_poller_monthly,
    fixed_monthly,
    lambda_usage,
    marginal_lambda_usage,
    per_million_tasks,
    sqs_requests_for,
    storage_usage,
    task_usage,
)
from bench.item_size import (
    STORAGE_OVERHEAD_BYTES,
    index_entry_size,
    item_size,
    strong_read_units,
    write_units,
)
from bench.outcome import Headline, SectionOutcome, markdown_table
from bench.provider import TYPICAL_TOKEN_BYTES
from bench.table_paths import PathMeasurements, PathResult
from bench.template_facts import (
    HANDLER_FUNCTIONS,
    TemplateFacts,
    deployed_poller_settings,
    index_attributes,
    template_facts,
)
from infra.project_template import function_memory_mb, project_template

HANDLERS_DIR = FUNCTIONS_DIR / "pingback_guard" / "handlers"
COLD_START_METRIC = "ColdStart"
COLD_START_SWITCH = "capture_cold_start_metric=True"
LOST_FRACTIONS = (0.01, 0.20)
LAMBDA_DURATION = "Lambda duration (arm64)"
TARGET_PER_MILLION = 10.0
IN_PHP_LATENCY_STEP_MS = 100


@dataclass(frozen=True)
class TableUnits:
    """Capacity units of each kind of table request, from the items the handlers wrote."""

    pending_write: int
    result_write: int
    refused_write: int
    index_write: int
    task_read: float
    stored_bytes: int


def table_units(measured: PathMeasurements) -> TableUnits:
    pending = item_size(measured.pending_item)
    solved = item_size(measured.solved_item)
    entry = index_entry_size(
        measured.pending_item, index_attributes(project_template(), "DueIndex")
    )
    return TableUnits(
        pending_write=write_units(pending),
        # UpdateItem is sized by the larger of the item before and after.
        result_write=write_units(max(pending, solved)),
        # A refused conditional write still costs the units of the item it checked.
        refused_write=write_units(solved),
        index_write=write_units(entry),
        task_read=strong_read_units(solved),
        stored_bytes=solved + STORAGE_OVERHEAD_BYTES,
    )


@dataclass(frozen=True)
class KindCost:
    """A kind's table units and cost per million tasks, from its items as the handlers wrote
    them (figure 1's run); every other input is the reCAPTCHA run's."""

    answer_bytes: int
    units: TableUnits
    per_million: float
    """USD per million tasks at the lower lost share."""
    exact: bool


def kind_costs(measured: PathMeasurements, facts: TemplateFacts) -> dict[str, KindCost]:
    costs = {}
    for kind, items in measured.kinds.items():
        as_kind = replace(measured, pending_item=items.pending_item, solved_item=items.solved_item)
        usage = task_usage(path_usages(as_kind, facts), LOST_FRACTIONS[0], ASSUMPTIONS)
        costs[kind] = KindCost(
            answer_bytes=len(items.answer.encode()),
            units=table_units(as_kind),
            per_million=sum(per_million_tasks(usage).values()),
            exact=items.exact,
        )
    return costs


def kind_cost_headlines(costs: dict[str, KindCost]) -> list[Headline]:
    if not costs:
        return []
    cheapest = min(costs, key=lambda kind: costs[kind].per_million)
    dearest = max(costs, key=lambda kind: costs[kind].per_million)
    served = sum(cost.exact for cost in costs.values())
    return [
        Headline(
            f"Cost per million tasks by kind, {LOST_FRACTIONS[0]:.0%} lost: cheapest .. dearest",
            f"{cheapest} USD {costs[cheapest].per_million:.3f}"
            f" .. {dearest} USD {costs[dearest].per_million:.3f}",
        ),
        Headline(
            "Kinds whose answer GET /tasks/{id} served exactly as the provider sent it",
            f"{served} of {len(costs)}",
            "all",
            served == len(costs),
        ),
    ]


def _kind_cost_details(costs: dict[str, KindCost]) -> list[str]:
    if not costs:
        return []
    rows = [
        [
            kind,
            str(cost.answer_bytes),
            f"{cost.units.pending_write} / {cost.units.result_write}",
            f"{cost.units.task_read:g}",
            f"{cost.units.stored_bytes:,}",
            f"{cost.per_million:.3f}",
        ]
        for kind, cost in sorted(costs.items())
    ]
    return [
        "",
        "Per kind (one task of each kind of the chaos mix through the real submit, callback and"
        " GET handlers, called back with the simulator's answer for it; the rest as above):"
        " what differs is the item, by its answer and request fields (an image task keeps no"
        " image). res.php requests per recovered task and ages per kind: figure 8.",
        "",
        *markdown_table(
            [
                "kind",
                "answer bytes",
                "WRU pending / result write",
                "RRU per GET",
                "bytes stored",
                f"USD per million, {LOST_FRACTIONS[0]:.0%} lost",
            ],
            rows,
        ),
    ]


def path_usages(measured: PathMeasurements, facts: TemplateFacts) -> PathUsages:
    paths, units, memory = measured.paths, table_units(measured), facts.memory_mb
    api = Usage(api_requests=1, log_bytes=access_log_line_bytes(facts.access_log_format))
    # A PENDING write adds a DueIndex entry; storing a result removes it: one index write each.
    stores = units.result_write + units.index_write
    dead_letter_callback = paths["dead_letter_callback"]
    return PathUsages(
        submit=api
        + _handler(paths["submit"], "submit", memory)
        + Usage(write_units=_writes(paths["submit"]) * (units.pending_write + units.index_write)),
        get_task=api
        + _handler(paths["get_task"], "get_task", memory)
        + Usage(read_units=_reads(paths["get_task"]) * units.task_read),
        storage=storage_usage(units.stored_bytes, facts.result_ttl_days),
        callback=api
        + _handler(paths["callback_first"], "callback", memory)
        + Usage(write_units=_writes(paths["callback_first"]) * stores),
        duplicate=api
        + _handler(paths["callback_duplicate"], "callback", memory)
        + Usage(write_units=_writes(paths["callback_duplicate"]) * units.refused_write),
        dead_letter=api
        + _handler(dead_letter_callback, "callback", memory)
        + _handler(paths["dead_letter_replay"], "replay", memory)
        + Usage(
            sqs_requests=_sends(dead_letter_callback)
            * sqs_requests_for(measured.dead_letter_message_bytes)
            + ASSUMPTIONS.sqs_event_source_requests_per_message,
            write_units=_writes(paths["dead_letter_replay"]) * stores,
        ),
        poll_recovery=marginal_lambda_usage(
            _invocation(paths["poll_recovery"], "poller"),
            _invocation(paths["poller_empty"], "poller"),
            _tasks_per_invocation(paths["poll_recovery"]),
            memory,
        )
        + Usage(write_units=_writes(paths["poll_recovery"]) * stores),
    )


def _tasks_per_invocation(result: PathResult) -> float:
    return result.tasks / result.invocations


def _invocation(result: PathResult, handler: str) -> Invocation:
    return result.handlers[handler].median_invocation()


def _handler(result: PathResult, handler: str, memory_mb: int) -> Usage:
    invocations = len(result.handlers[handler].durations_ms) / result.tasks
    return lambda_usage(_invocation(result, handler), invocations, memory_mb)


def _writes(result: PathResult) -> float:
    """Writes DynamoDB answered (a write that never reached it is not billed)."""
    writes = frozenset({"UpdateItem", "PutItem", "DeleteItem"})
    return result.per_task(result.tally.count("dynamodb", writes, answered=True))


def _reads(result: PathResult) -> float:
    return result.per_task(result.tally.table_reads)


def _sends(result: PathResult) -> float:
    return result.per_task(result.tally.count("sqs", frozenset({"SendMessage"})))


def custom_metrics(measured: PathMeasurements, facts: TemplateFacts) -> set[tuple[str, ...]]:
    """Every metric the functions can create: those the template watches, those this run
    emitted, and a ColdStart per function that asks for it (its dimension is the function
    name; in one process Powertools sees only one cold start, on Lambda each function has its
    own)."""
    service = f"service={_service_name()}"
    watched = {(name, service) for name in facts.custom_metric_names}
    emitted = {(name, *dimensions) for name, dimensions in measured.emitted_metrics}
    cold_starts = {
        (COLD_START_METRIC, f"function_name={HANDLER_FUNCTIONS[handler]}", service)
        for handler in HANDLER_FUNCTIONS
        if COLD_START_SWITCH in (HANDLERS_DIR / f"{handler}.py").read_text()
    }
    without_run_cold_start = {metric for metric in emitted if metric[0] != COLD_START_METRIC}
    return watched | without_run_cold_start | cold_starts


def fixed_inputs(measured: PathMeasurements, facts: TemplateFacts) -> FixedInputs:
    empty = measured.paths["poller_empty"]
    return FixedInputs(
        sweeps_per_month=facts.sweeps_per_month,
        empty_sweep=_invocation(empty, "poller"),
        queries_per_sweep=empty.per_task(empty.tally.table_queries),
        memory_mb=facts.memory_mb,
        alarm_metrics=facts.alarm_metrics,
        custom_metrics=len(custom_metrics(measured, facts)),
        dashboards=facts.dashboards,
        secrets=facts.secrets,
        kms_keys=facts.kms_keys,
    )


def busy_poller(measured: PathMeasurements, facts: TemplateFacts) -> BusyPoller:
    deployed = deployed_poller_settings().policy
    empty = measured.paths["poller_empty"]
    return BusyPoller(
        invocations_per_month=facts.sweeps_per_month,
        run_seconds=deployed.run_seconds,
        sweep_interval_seconds=deployed.sweep_interval_seconds,
        memory_mb=function_memory_mb(project_template(), "PollerFunction"),
        queries_per_sweep=empty.per_task(empty.tally.table_queries),
    )


def _service_name() -> str:
    variables = project_template()["Globals"]["Function"]["Environment"]["Variables"]
    return str(variables["POWERTOOLS_SERVICE_NAME"])


def cost_outcome(measured: PathMeasurements) -> SectionOutcome:
    facts = template_facts(project_template())
    paths = path_usages(measured, facts)
    months = {
        lost: per_million_tasks(task_usage(paths, lost, ASSUMPTIONS)) for lost in LOST_FRACTIONS
    }
    fixed = fixed_monthly(fixed_inputs(measured, facts))
    busy = busy_poller(measured, facts)
    busy_label = (
        f"Poller sweeping every {busy.sweep_interval_seconds:g} s,"
        f" {busy.run_seconds:g} s a minute (busy stack)"
    )
    fixed[busy_label] = busy_poller_monthly(busy)
    totals = {lost: sum(costs.values()) for lost, costs in months.items()}
    by_kind = kind_costs(measured, facts)
    low, high = LOST_FRACTIONS
    return SectionOutcome(
        key="cost",
        title="5. Cost model: USD per million tasks, us-east-1 list prices",
        data={
            "per_million_tasks": {f"{lost:.0%} lost": costs for lost, costs in months.items()},
            "totals_per_million_tasks": {f"{lost:.0%} lost": t for lost, t in totals.items()},
            "fixed_monthly": fixed,
            "fixed_monthly_total": sum(fixed.values()),
            "table_units": asdict(table_units(measured)),
            "path_usage_per_task": {name: asdict(usage) for name, usage in _named(paths).items()},
            "assumptions": {**asdict(ASSUMPTIONS), "token_bytes": TYPICAL_TOKEN_BYTES},
            "prices": asdict(PRICES),
            "by_kind": {kind: asdict(cost) for kind, cost in by_kind.items()},
        },
        headlines=[
            Headline(
                f"Cost per million tasks, {low:.0%} callbacks lost (logs included)",
                f"USD {totals[low]:.3f}",
                f"<= USD {TARGET_PER_MILLION:.0f}",
                totals[low] <= TARGET_PER_MILLION,
            ),
            Headline(
                f"Cost per million tasks, {high:.0%} callbacks lost", f"USD {totals[high]:.3f}"
            ),
            Headline("Fixed monthly cost (any volume)", f"USD {sum(fixed.values()):.2f}"),
            *kind_cost_headlines(by_kind),
        ],
        details=_details(months, totals, fixed, paths, facts) + _kind_cost_details(by_kind),
    )


def _named(paths: PathUsages) -> dict[str, Usage]:
    return {name: getattr(paths, name) for name in PathUsages.__dataclass_fields__}


def _details(
    months: dict[float, dict[str, float]],
    totals: dict[float, float],
    fixed: dict[str, float],
    paths: PathUsages,
    facts: TemplateFacts,
) -> list[str]:
    services = list(next(iter(months.values())))
    breakdown = [
        [service, *[f"{months[lost][service]:.3f}" for lost in LOST_FRACTIONS]]
        for service in services
    ]
    breakdown.append(["**total**", *[f"**{totals[lost]:.3f}**" for lost in LOST_FRACTIONS]])
    step_cost = (
        facts.memory_mb / 1024 * IN_PHP_LATENCY_STEP_MS / 1000 * PRICES.lambda_arm_gb_second
    ) * MILLION
    timing_free = {lost: totals[lost] - months[lost][LAMBDA_DURATION] for lost in LOST_FRACTIONS}
    return [
        "USD per million tasks (each: POST /tasks, one GET /tasks/{id}, storage until TTL, and"
        " its result by callback, or by poll recovery for the lost share;"
        f" {ASSUMPTIONS.duplicate_fraction:.0%} duplicate callbacks,"
        f" {ASSUMPTIONS.dead_letter_fraction:.1%} through the DLQ and replay):",
        "",
        *markdown_table(["service", *[f"{lost:.0%} lost" for lost in LOST_FRACTIONS]], breakdown),
        "",
        "Fixed monthly costs (scheduled sweeps, pollers, alarms, metrics, dashboard, secret):",
        "",
        *markdown_table(
            ["item", "USD / month"],
            [[name, f"{cost:.2f}"] for name, cost in fixed.items()]
            + [["**total**", f"**{sum(fixed.values()):.2f}**"]],
        ),
        "",
        "Usage per task on each path (from figure 1's run):",
        "",
        *markdown_table(
            ["path", "API req", "Lambda inv", "GB-s", "WRU", "RRU", "SQS req", "log bytes"],
            [_usage_row(name, usage) for name, usage in _named(paths).items()],
        ),
        "",
        "Only the Lambda duration line depends on this machine's speed (in-process medians"
        " against moto and a local simulator); everything else is counts times prices: "
        + ", ".join(f"USD {timing_free[lost]:.3f} at {lost:.0%} lost" for lost in LOST_FRACTIONS)
        + f" without it. Every {IN_PHP_LATENCY_STEP_MS} ms of real in.php latency in submit adds"
        f" USD {step_cost:.2f} per million tasks.",
    ]


def _usage_row(name: str, usage: Usage) -> list[Any]:
    return [
        name,
        f"{usage.api_requests:g}",
        f"{usage.lambda_requests:g}",
        f"{usage.lambda_gb_seconds:.5f}",
        f"{usage.write_units:g}",
        f"{usage.read_units:g}",
        f"{usage.sqs_requests:g}",
        f"{usage.log_bytes:,.0f}",
    ]
