"""Figure 6: token freshness when the worker has the token, and what the checking costs.

The local stack (infra.local, template.yaml at its DEFAULT parameters, real time: no time scale,
because the freshness rules run on wall-clock time inside the functions) against the CaptchaAI
simulator (solve times lognormal, median 25 s, as the simulator's default). A simulated worker
per task submits with POST /tasks and waits with GET /tasks/{task_id} about once a second
(infra/client_worker.py), in one of three ways, each on its own stack (issue 24): results
pushed over the WebSocket API, GETs paced by the stack's hints, or a GET every second. Each runs
two phases: no pingback lost, then every pingback lost. Ages are measured against the
simulator's truth (when it really finished each task), never against what the stack says; the
stack's own claims are checked against it.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.cost import ASSUMPTIONS, MILLION, Usage, cost_by_service
from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.provider import API_KEY
from infra.client_worker import GET_PERIOD_SECONDS, ClientWaiter, WaitMode
from infra.local import LocalOptions, LocalStack
from infra.project_template import (
    TEMPLATE_PATH,
    function_memory_mb,
    function_traced,
    parameter_default,
    project_template,
)
from infra.simulator import Faults, Simulator, SimulatorConfig, SolveTimeDistribution

TASKS = int(os.environ.get("BENCH_FRESHNESS_TASKS", "30"))
SUBMIT_SPREAD_SECONDS = 10.0
WAIT_TIMEOUT_SECONDS = 420.0
AGE_TARGET_SECONDS = 10.0
PUSH_LATENCY_TARGET_SECONDS = 1.5
WAIT_COST_TARGET_USD = 2.0
EXTRA_REQUESTS_TARGET = 1.0
OLDEST_SHOWN = 3
REQUEST = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
}
CADENCE_FUNCTIONS = ("GetTaskFunction", "PollerFunction", "PushFunction")
# What the worker's waiting itself invokes (the poller runs whether anyone waits or not).
WAIT_FUNCTIONS = ("GetTaskFunction", "PushFunction")
WEBSOCKET_API = "PushApi"
# One API access log line (API requests and WebSocket messages alike), about this long.
ACCESS_LOG_LINE_BYTES = 250
REPORT_LINE = re.compile(r"^REPORT RequestId: \S+\tDuration: ([0-9.]+) ms$", re.MULTILINE)


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    mode: WaitMode
    overrides: dict[str, str] = field(default_factory=dict)


VARIANTS = (
    Variant("push", "template defaults, results pushed (WebSocket API)", WaitMode.PUSH),
    Variant("paced", "template defaults, GETs paced by the stack's hints", WaitMode.PACED),
    Variant("every_second", "template defaults, a GET every second", WaitMode.EVERY_SECOND),
)


@dataclass(frozen=True)
class TaskRun:
    task_id: str
    status: str
    delivered_via: str | None
    true_age: float | None
    """When the worker had the token minus when the simulator really finished it."""
    claimed_age: float | None
    claimed_usable: bool
    bounds_hold: bool
    gets: int
    after_callback: float | None
    """When the worker had the token minus when its pingback reached the callback."""
    solve_seconds: float = 0.0
    """How long the simulator took to solve it (its finish minus its submit)."""


@dataclass(frozen=True)
class Phase:
    variant: str
    pingbacks_lost: bool
    tasks: list[TaskRun]
    res_get_requests: int
    invocations: dict[str, list[float]]
    table_calls: dict[str, int]
    seconds: float
    log_bytes: dict[str, int] = field(default_factory=dict)
    """What each function wrote to its log in the phase (its output and REPORT lines)."""
    websocket_messages: int = 0
    """Messages the WebSocket API carried in the phase, both ways."""
    websocket_messages_in: int = 0
    """Of which from the worker (subscribes): each an access-log line."""
    connection_seconds: float = 0.0

    @property
    def solved(self) -> list[TaskRun]:
        return [task for task in self.tasks if task.true_age is not None]

    def age_percentile(self, fraction: float) -> float | None:
        return percentile([t.true_age for t in self.solved if t.true_age is not None], fraction)

    def after_callback_percentile(self, fraction: float) -> float | None:
        after = [t.after_callback for t in self.solved if t.after_callback is not None]
        return percentile(after, fraction)

    @property
    def res_requests_per_task(self) -> float:
        return self.res_get_requests / len(self.tasks)

    def lambda_seconds_per_task(self, function: str) -> float:
        return sum(self.invocations.get(function, [])) / 1000 / len(self.tasks)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def measure_freshness() -> SectionOutcome:
    with ThreadPoolExecutor(len(VARIANTS)) as pool:
        runs = list(pool.map(_run_variant, VARIANTS))
    phases = [phase for run in runs for phase in run]
    return freshness_outcome(phases, _lifetime())


def _lifetime() -> float:
    return float(parameter_default(project_template(), "RecaptchaTokenLifetimeSeconds"))


SEED = 20261130


def simulator_config(seed: int = SEED) -> SimulatorConfig:
    """The simulator at its defaults: solve times lognormal, median 25 s, 5..180 s."""
    return SimulatorConfig(
        api_key=API_KEY,
        seed=seed,
        solve_time=SolveTimeDistribution(),  # lognormal, median 25 s, 5..180 s
        unsolvable_rate=0.0,
        result_retention_seconds=600.0,
        faults=Faults(),
    )


@contextmanager
def fresh_stack(variant: Variant, seed: int = SEED) -> Iterator[tuple[LocalStack, Simulator]]:
    """A new simulator and a new local stack at the template's defaults (and the variant's
    overrides): nothing learned, no poller invocation yet."""
    with (
        tempfile.TemporaryDirectory(prefix=f"bench-freshness-{variant.key}-") as run_dir,
        Simulator(simulator_config(seed)) as simulator,
    ):
        options = LocalOptions(
            template=TEMPLATE_PATH,
            provider_url=simulator.base_url,
            provider_api_key=API_KEY,
            parameter_overrides=variant.overrides,
            run_dir=Path(run_dir),
            # Each phase's workers wait at once: enough GetTask workers that none queues.
            workers_by_function={"GetTaskFunction": 4},
            warm_start=True,  # the figures are the stack's waits, not its first cold starts
        )
        with LocalStack(options) as stack:
            yield stack, simulator


def _run_variant(variant: Variant) -> list[Phase]:
    with fresh_stack(variant) as (stack, simulator):
        return [
            run_phase(variant, stack, simulator, pingbacks_lost=False),
            run_phase(variant, stack, simulator, pingbacks_lost=True),
        ]


def run_phase(
    variant: Variant,
    stack: LocalStack,
    simulator: Simulator,
    pingbacks_lost: bool,
    spread_seconds: float = SUBMIT_SPREAD_SECONDS,
) -> Phase:
    """TASKS tasks submitted over ``spread_seconds``, a worker each waiting the variant's way."""
    simulator.update_faults(pingback_drop_rate=1.0 if pingbacks_lost else 0.0)
    log_dir = Path(stack.ready.log_dir)
    offsets = {name: _log_size(log_dir, name) for name in CADENCE_FUNCTIONS}
    stack.reset_calls()
    res_before = simulator.stats()["res_actions"]["get"]
    messages_before = _websocket_messages(stack)
    messages_in_before = _websocket_messages(stack, "messages")
    started = time.time()
    waiter = ClientWaiter(
        stack.ready.api_url, stack.ready.region, variant.mode, stack.ready.websocket_url
    )
    try:
        with ThreadPoolExecutor(TASKS) as pool:
            waited = list(pool.map(lambda n: _one_task(waiter, n, spread_seconds), range(TASKS)))
        connected = waiter.push is not None and waiter.push.connected
    finally:
        waiter.close()
    seconds = time.time() - started
    res_gets = simulator.stats()["res_actions"]["get"] - res_before
    truth = {str(task["id"]): task for task in simulator.tasks()}
    arrivals = _callback_arrivals(truth.values())
    return Phase(
        variant=variant.key,
        pingbacks_lost=pingbacks_lost,
        tasks=[
            _task_run(task_id, result, truth[task_id], arrivals.get(task_id))
            for task_id, result in waited
        ],
        res_get_requests=res_gets,
        invocations={
            name: _durations_since(log_dir, name, offsets[name]) for name in CADENCE_FUNCTIONS
        },
        log_bytes={name: _log_size(log_dir, name) - offsets[name] for name in CADENCE_FUNCTIONS},
        table_calls=_table_calls(stack.calls_report()["counts"]),
        seconds=seconds,
        websocket_messages=_websocket_messages(stack) - messages_before,
        websocket_messages_in=_websocket_messages(stack, "messages") - messages_in_before,
        # The one connection the worker held (it connects at its first wait).
        connection_seconds=seconds if connected else 0.0,
    )


def _websocket_messages(stack: LocalStack, *kinds: str) -> int:
    """Messages so far: from workers ("messages") and posted to them ("posted")."""
    stats = stack.health().get("websocket_apis", {}).get(WEBSOCKET_API, {})
    return sum(int(stats.get(kind, 0)) for kind in kinds or ("messages", "posted"))


def _callback_arrivals(tasks: Iterable[dict[str, Any]]) -> dict[str, float]:
    """When each task's pingback reached the callback (the simulator sent the one the callback
    answered 200; loopback: sent is arrived)."""
    arrivals: dict[str, float] = {}
    for task in tasks:
        accepted = [d["at"] for d in task.get("deliveries", []) if d.get("outcome") == 200]
        if accepted:
            arrivals[str(task["id"])] = float(min(accepted))
    return arrivals


def _one_task(waiter: ClientWaiter, index: int, spread_seconds: float) -> tuple[str, Any]:
    time.sleep(spread_seconds * index / TASKS)
    task_id = waiter.submit(REQUEST)
    return task_id, waiter.wait(task_id, WAIT_TIMEOUT_SECONDS)


def _task_run(
    task_id: str, waited: Any, truth: dict[str, Any], callback_at: float | None
) -> TaskRun:
    view = waited.view
    solved = view.get("status") == "SOLVED"
    finished = float(truth["finished_at"])
    earliest, latest = view.get("finished_at_earliest"), view.get("finished_at_latest")
    return TaskRun(
        task_id=task_id,
        status=str(view.get("status")),
        delivered_via=view.get("delivered_via"),
        true_age=waited.had_at - finished if solved else None,
        claimed_age=view.get("token_age_seconds"),
        claimed_usable=bool(view.get("usable")),
        bounds_hold=solved and earliest is not None and earliest <= finished <= latest,
        gets=waited.gets,
        after_callback=(
            waited.had_at - callback_at
            if solved and callback_at is not None and view.get("delivered_via") == "callback"
            else None
        ),
        solve_seconds=finished - float(truth["submitted_at"]),
    )


def _log_size(log_dir: Path, function: str) -> int:
    path = log_dir / f"{function}.log"
    return path.stat().st_size if path.exists() else 0


def _durations_since(log_dir: Path, function: str, offset: int) -> list[float]:
    path = log_dir / f"{function}.log"
    if not path.exists():
        return []
    with path.open("rb") as log:
        log.seek(offset)
        text = log.read().decode("utf-8", "replace")
    return [float(ms) for ms in REPORT_LINE.findall(text)]


def _table_calls(counts: Sequence[dict[str, Any]]) -> dict[str, int]:
    found: Counter[str] = Counter()
    for row in counts:
        if row["service"] == "dynamodb" and row["function"] in CADENCE_FUNCTIONS:
            found[f"{row['function']}:{row['operation']}"] += int(row["count"])
    return dict(found)


# ------------------------------------------------------------------ figures


@dataclass(frozen=True)
class Deployed:
    """What the template deploys a function with, as far as its cost goes."""

    memory_mb: int
    traced: bool


def deployed(function: str) -> Deployed:
    template = project_template()
    return Deployed(
        memory_mb=function_memory_mb(template, function),
        traced=function_traced(template, function),
    )


def wait_usage(phase: Phase, functions: Mapping[str, Deployed]) -> Usage:
    """What the worker's waiting costs per task: its GETs (API request, GetTask invocation at
    its mean duration, the table requests GetTask made) and push (PushFunction invocations,
    durations and table requests, WebSocket messages both ways, the connection's minutes), with
    each function's log output, an access-log line per request or message in, and X-Ray's 5%
    of traced invocations. The poller is not in it: it sweeps whether anyone waits or not (the
    stack's cost, section 5); nor is the one GET per task the harness makes after the wait to
    read the view. Table requests are priced at one unit each (a lower bound: a read-through
    result write costs 3-5)."""
    tasks = len(phase.tasks)
    gets = sum(task.gets for task in phase.tasks)
    calls = phase.table_calls
    get_invocations = phase.invocations.get("GetTaskFunction", [])
    pushes = phase.invocations.get("PushFunction", [])
    get, push = functions["GetTaskFunction"], functions["PushFunction"]
    get_log_bytes = phase.log_bytes.get("GetTaskFunction", 0) / max(1, len(get_invocations))
    total = Usage(
        api_requests=gets,
        lambda_requests=gets + len(pushes),
        lambda_gb_seconds=(
            get.memory_mb * _mean(get_invocations) * gets + push.memory_mb * sum(pushes)
        )
        / 1024
        / 1000,
        read_units=max(0, calls.get("GetTaskFunction:GetItem", 0) - tasks)
        + calls.get("PushFunction:GetItem", 0),
        write_units=sum(
            count
            for name, count in calls.items()
            if name.split(":")[1] in {"UpdateItem", "PutItem", "DeleteItem"}
            and not name.startswith("PollerFunction")
        ),
        # Each function's output (its REPORT lines standing for Lambda's), and an access-log
        # line per API request and per WebSocket message in (posts to a connection have none).
        log_bytes=gets * get_log_bytes
        + phase.log_bytes.get("PushFunction", 0)
        + (gets + phase.websocket_messages_in) * ACCESS_LOG_LINE_BYTES,
        traces=ASSUMPTIONS.trace_fixed_rate * (gets * get.traced + len(pushes) * push.traced),
        websocket_messages=phase.websocket_messages,
        connection_minutes=phase.connection_seconds / 60,
    )
    return total.times(1 / tasks)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def usd_per_million(usage: Usage) -> float:
    return sum(cost_by_service(usage.times(MILLION)).values())


def phase_figures(
    phase: Phase, lifetime: float, functions: Mapping[str, Deployed]
) -> dict[str, Any]:
    solved = phase.solved
    usage = wait_usage(phase, functions)
    return {
        "variant": phase.variant,
        "pingbacks_lost": phase.pingbacks_lost,
        "tasks": len(phase.tasks),
        "solved_in_time": len(solved),
        "delivered_via": dict(Counter(str(t.delivered_via) for t in solved)),
        "true_age_p50_seconds": phase.age_percentile(0.5),
        "true_age_p95_seconds": phase.age_percentile(0.95),
        "true_age_max_seconds": phase.age_percentile(1.0),
        "after_callback_p50_seconds": phase.after_callback_percentile(0.5),
        "after_callback_p95_seconds": phase.after_callback_percentile(0.95),
        "unusable_when_worker_had_it": sum(
            1 for t in solved if t.true_age is not None and t.true_age >= lifetime
        ),
        "called_usable_but_was_not": sum(
            1
            for t in solved
            if t.claimed_usable and t.true_age is not None and t.true_age >= lifetime
        ),
        "claimed_age_below_true_age": sum(
            1
            for t in solved
            if t.claimed_age is not None
            and t.true_age is not None
            and t.claimed_age < t.true_age - 1
        ),
        "bounds_contain_true_finish": sum(1 for t in solved if t.bounds_hold),
        # The tail and where it comes from: solved early (before the first check) or late.
        "oldest": [
            {"age_seconds": t.true_age, "solve_seconds": t.solve_seconds}
            for t in sorted(solved, key=lambda t: t.true_age or 0.0, reverse=True)[:OLDEST_SHOWN]
        ],
        "res_get_requests_per_task": phase.res_requests_per_task,
        "worker_gets_per_task": sum(t.gets for t in phase.tasks) / len(phase.tasks),
        "lambda_seconds_per_task": {
            name: phase.lambda_seconds_per_task(name) for name in CADENCE_FUNCTIONS
        },
        "websocket_messages_per_task": phase.websocket_messages / len(phase.tasks),
        "wait_usd_per_million_tasks": usd_per_million(usage),
        "wait_usd_per_million_tasks_by_service": {
            name: cost for name, cost in cost_by_service(usage.times(MILLION)).items() if cost
        },
        "table_calls": phase.table_calls,
        "seconds": phase.seconds,
    }


def freshness_outcome(phases: Sequence[Phase], lifetime: float) -> SectionOutcome:
    functions = {name: deployed(name) for name in WAIT_FUNCTIONS}
    figures = {
        f"{phase.variant}/{'lost' if phase.pingbacks_lost else 'delivered'}": phase_figures(
            phase, lifetime, functions
        )
        for phase in phases
    }
    return SectionOutcome(
        key="freshness",
        title=f"6. Freshness: token age when the worker has it ({TASKS} tasks a phase, real time)",
        data={
            "method": {
                "tasks_per_phase": TASKS,
                "worker_get_period_seconds": GET_PERIOD_SECONDS,
                "solve_time": "simulator default: lognormal median 25 s, sigma 0.45, 5..180 s",
                "time_scale": 1.0,
                "token_lifetime_seconds": lifetime,
            },
            "variants": {variant.key: asdict(variant) for variant in VARIANTS},
            "phases": figures,
        },
        headlines=_headlines(figures),
        details=_details(figures),
    )


def _headlines(figures: dict[str, dict[str, Any]]) -> list[Headline]:
    push_lost, push_ok = figures["push/lost"], figures["push/delivered"]
    p95_lost = push_lost["true_age_p95_seconds"]
    after = push_ok["after_callback_p95_seconds"]
    extra = push_ok["res_get_requests_per_task"]
    wrong = sum(f["called_usable_but_was_not"] for f in figures.values())
    waits = " / ".join(
        number(figures[f"{mode}/delivered"]["wait_usd_per_million_tasks"])
        for mode in ("push", "paced", "every_second")
    )
    wait_push = push_ok["wait_usd_per_million_tasks"]
    return [
        Headline(
            "the worker's wait, USD per million tasks: push / paced GET / 1 s GET (no pingback"
            " lost)",
            waits,
            f"push <= {WAIT_COST_TARGET_USD:.0f}",
            wait_push <= WAIT_COST_TARGET_USD,
        ),
        Headline(
            "pushed worker: p95 from the pingback's arrival at the callback to the token in hand",
            _seconds(after),
            f"<= {PUSH_LATENCY_TARGET_SECONDS:.1f} s",
            after is not None and after <= PUSH_LATENCY_TARGET_SECONDS,
        ),
        Headline(
            "every pingback lost: p95 token age when the worker has it, push / paced / 1 s",
            " / ".join(
                _seconds(figures[f"{mode}/lost"]["true_age_p95_seconds"])
                for mode in ("push", "paced", "every_second")
            ),
            f"push < {AGE_TARGET_SECONDS:.0f} s",
            p95_lost is not None and p95_lost < AGE_TARGET_SECONDS,
        ),
        Headline(
            "no pingback lost: extra res.php requests per task, push / paced / 1 s",
            " / ".join(
                number(figures[f"{mode}/delivered"]["res_get_requests_per_task"])
                for mode in ("push", "paced", "every_second")
            ),
            f"push <= {EXTRA_REQUESTS_TARGET:.1f}",
            extra <= EXTRA_REQUESTS_TARGET,
        ),
        Headline(
            "every pingback lost: res.php requests per task, push / paced / 1 s",
            " / ".join(
                number(figures[f"{mode}/lost"]["res_get_requests_per_task"])
                for mode in ("push", "paced", "every_second")
            ),
        ),
        Headline(
            "tokens GET called usable that were not (all phases)", str(wrong), "0", wrong == 0
        ),
    ]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _details(figures: dict[str, dict[str, Any]]) -> list[str]:
    rows = []
    for key, figure in figures.items():
        rows.append(
            [
                key,
                f"{figure['solved_in_time']}/{figure['tasks']}",
                ", ".join(
                    f"{via} {count}" for via, count in sorted(figure["delivered_via"].items())
                ),
                _seconds(figure["true_age_p50_seconds"]),
                _seconds(figure["true_age_p95_seconds"]),
                _seconds(figure["true_age_max_seconds"]),
                str(figure["unusable_when_worker_had_it"]),
                str(figure["called_usable_but_was_not"]),
                f"{figure['bounds_contain_true_finish']}/{figure['solved_in_time']}",
                _seconds(figure["after_callback_p95_seconds"]),
                number(figure["res_get_requests_per_task"]),
                number(figure["worker_gets_per_task"], 1),
                number(figure["websocket_messages_per_task"], 1),
                number(figure["wait_usd_per_million_tasks"]),
            ]
        )
    table = markdown_table(
        [
            "variant/phase",
            "solved in time",
            "delivered via",
            "age p50",
            "age p95",
            "age max",
            "unusable when had",
            "called usable, was not",
            "bounds hold",
            "pingback to worker p95",
            "res.php get / task",
            "worker GETs / task",
            "WebSocket messages / task",
            "wait USD / M tasks",
        ],
        rows,
    )
    breakdown = "The wait by service, USD per million tasks (no pingback lost):"
    oldest = ", ".join(
        f"{_seconds(t['age_seconds'])} (solved {_seconds(t['solve_seconds'])} after submit)"
        for t in figures["push/lost"]["oldest"]
    )
    tail = f"Every pingback lost, the pushed worker's oldest tokens: {oldest}."
    return [*table, "", tail, "", breakdown, "", *_wait_breakdown(figures)]


def _wait_breakdown(figures: dict[str, dict[str, Any]]) -> list[str]:
    delivered = {key: f for key, f in figures.items() if key.endswith("/delivered")}
    services = sorted(
        {name for f in delivered.values() for name in f["wait_usd_per_million_tasks_by_service"]}
    )
    rows = [
        [
            key.split("/")[0],
            *[
                number(f["wait_usd_per_million_tasks_by_service"].get(name, 0.0), 3)
                for name in services
            ],
        ]
        for key, f in delivered.items()
    ]
    return markdown_table(["way of waiting", *services], rows)
