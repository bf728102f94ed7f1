"""Figure 9: where the nets stop keeping their promise as load grows.

The stack's own services on a fake clock (bench/scale_model.py): SubmitService (in.php, then
the task PENDING with each kind's first check), CallbackService (a pingback's result write, the
replay's too) and PollerService at the template's default parameters, invoked every minute as
the schedule does, against a provider model (res.php 0.2-1 s, the simulator's solve times per kind,
results kept 600 s) and a table model charging DynamoDB's per-partition throughput. Tasks come
at a steady rate in the chaos mix (infra/chaos/kind_mix.py). Two scenarios a rate: (a) 1% of
pingbacks lost, for SUBMIT_SECONDS; (b) every pingback lost for OUTAGE_SECONDS, then delivered
again for RESTORED_SECONDS. Each row runs until every task's result is stored or forgotten.

Sampled rows: above SIMULATED_RATE tasks a second, a row runs a 1/k slice of the stack (k =
rate / SIMULATED_RATE): every k-th task, with 1/k of the poller's requests per sweep and ids per
request, its res.php requests k times slower (1/k of its request throughput), and the table's
and the provider's loads counted k times. A slice of a shared ceiling holds the same ratios, so
a row that fails sampled fails whole; ids= batches of 1/k size need as many requests a task.

Fan-out (logic/poller_fan_out.py): a row whose one poller's CPU was busy more than the product's
FAN_OUT_LOAD_SHARE runs again as the stack then runs, PollerHelpers + 1 pollers each sweeping
its group of due shards with its own CPU: a slice of 1/G of the tasks (G groups) with one
poller's whole resources (sampled further above SIMULATED_RATE a group), each poller started
again a sweep after its run ends (the main holder starts helpers while the load holds).

Not modelled: workers waiting (GET read-through, push): the answer age is at the table, where
every path to the worker starts; the table and Lambda never throttle here, their loads are
compared with their limits instead.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from bench.cost import PRICES, Usage, cost_by_service
from bench.freshness import percentile
from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.scale_model import (
    RES_LATENCY_SECONDS,
    RETENTION_SECONDS,
    CapacityStore,
    PartitionLoad,
    ProviderModel,
    SimClock,
    per_minute,
)
from bench.template_facts import deployed_poller_settings
from infra.chaos.kind_mix import KIND_MIX
from infra.project_template import (
    function_memory_mb,
    parameter_default,
    placeholder_environment,
    project_template,
)
from pingback_guard.domain.task import CaptchaRequest, DeliveryPath, TaskResult
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.kinds.registry import lifetime_seconds
from pingback_guard.logic.callback import CallbackService
from pingback_guard.logic.poll_schedule import SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.poller_fan_out import FAN_OUT_LOAD_SHARE, MB_PER_VCPU
from pingback_guard.logic.submit import PendingTasks, SubmitService, issue_pingback
from pingback_guard.settings.submit import SubmitSettings
from tests.fakes import FakeDeadLetterQueue

KEY = "scale"
TITLE = "9. Scale: the nets at 10, 100 and 1,000 tasks a second"
RATES = (10, 100, 1000)
SIMULATED_RATE = 50
SUBMIT_SECONDS = 300.0
LOST_FRACTION = 0.01
OUTAGE_SECONDS = 600.0
RESTORED_SECONDS = 120.0
PINGBACK_DELAY_SECONDS = (0.1, 1.0)
INVOCATION_SECONDS = 70.0
"""PollerFunction's Timeout."""
SCHEDULE_SECONDS = 60.0
# From a helper's lease ending to the next helper of its group sweeping: the main holder's next
# sweep (every 5 s) starts it, and Lambda runs an asynchronous invocation within about a second.
HELPER_START_SECONDS = 3.5
TARGET_RATE = 100
TOKEN_AGE_TARGET_SECONDS = 10.0
# Lambda: a function's requests in flight (Little's law: arrivals x duration). Submit waits on
# in.php (as long as res.php here); a pingback is one conditional write.
SUBMIT_SECONDS_EACH = sum(RES_LATENCY_SECONDS) / 2 + 0.05
CALLBACK_SECONDS_EACH = 0.05
LAMBDA_ACCOUNT_CONCURRENCY = 1000
MEMORY_GB = 128 / 1024
POLLER_CPU_SATURATED = 0.8
START = 1_800_000_000.0
PUBLIC_BASE_URL = "https://pingbacks.example.test"
CALLBACK_SECRET = "PgBenchScaleCallbackSecret00000000000001"


@dataclass(frozen=True)
class Scenario:
    name: str
    lost: str
    submit_seconds: float

    def pingback_lost(self, offset: float, draw: float) -> bool:
        if self.name == "a":
            return draw < LOST_FRACTION
        return offset < OUTAGE_SECONDS


SCENARIOS = (
    Scenario("a", "1% of pingbacks lost", SUBMIT_SECONDS),
    Scenario("b", "every pingback lost 10 min, then restored", OUTAGE_SECONDS + RESTORED_SECONDS),
)


@dataclass(frozen=True)
class Sizing:
    """What a row deploys: the poller's memory (its CPU) and the API routes' throttles."""

    name: str
    poller_memory_mb: int
    task_route_rate: float
    callback_route_rate: float
    poller_helpers: int


def default_sizing() -> Sizing:
    template = project_template()
    return Sizing(
        "defaults",
        function_memory_mb(template, "PollerFunction"),
        float(parameter_default(template, "ApiThrottlingRateLimit")),
        float(parameter_default(template, "CallbackThrottlingRateLimit")),
        int(parameter_default(template, "PollerHelpers")),
    )


def alone(sizing: Sizing) -> Sizing:
    """The same deployment with PollerHelpers 0: one poller invocation at a time."""
    return dataclasses.replace(sizing, name=f"{sizing.name}, PollerHelpers 0", poller_helpers=0)


@dataclass
class Row:
    rate: int
    scenario: str
    sizing: Sizing
    sample: int
    tasks: int
    lost: int
    age_by_kind: dict[str, tuple[float | None, float | None]]
    token_age_p95: float | None
    res_requests_per_second: float
    res_limit_share: float
    table_requests_per_task: float
    hottest: PartitionLoad
    concurrency: dict[str, float]
    usd_per_million: float
    route_shares: dict[str, float]
    """Each API route throttle of the template: the row's requests a second over its rate."""
    poller_cpu_busy: float
    """The share of a poller's running time its CPU was busy (its memory's share of a vCPU)."""
    pollers: int
    """Poller invocations sweeping at once: 1, or every helper group and the main holder."""

    @property
    def gives_out(self) -> list[str]:
        """What passed its limit, the worst first."""
        shares = {
            f"res.php requests ({self.res_limit_share:.0%} of the key's limit)": (
                self.res_limit_share
            ),
            f"DynamoDB {self.hottest.partition} ({self.hottest.share:.0%} of its"
            f" {self.hottest.limit:.0f} units/s)": self.hottest.share,
            f"Lambda concurrency ({self.concurrency['submit']:.0f} submits in flight of the"
            f" account's default {LAMBDA_ACCOUNT_CONCURRENCY})": self.concurrency["submit"]
            / LAMBDA_ACCOUNT_CONCURRENCY,
        }
        shares |= {
            f"API Gateway route throttle {name} ({share:.0%} of it)": share
            for name, share in self.route_shares.items()
        }
        passed = [name for name, share in sorted(shares.items(), key=lambda s: -s[1]) if share > 1]
        if self.poller_cpu_busy > POLLER_CPU_SATURATED:
            passed.append(
                f"the poller's CPU at {self.sizing.poller_memory_mb} MB"
                f" ({self.poller_cpu_busy:.0%} busy)"
            )
        if self.lost:
            passed.append(
                "the poller fell behind: its backlog outgrew the provider's"
                f" {RETENTION_SECONDS:.0f} s retention"
            )
        return passed

    @property
    def met(self) -> bool:
        token_fresh = (
            self.token_age_p95 is not None and self.token_age_p95 < TOKEN_AGE_TARGET_SECONDS
        )
        return not self.gives_out and token_fresh


def measure_scale() -> SectionOutcome:
    defaults = default_sizing()
    rows = [run_row(rate, scenario, defaults) for rate in RATES for scenario in SCENARIOS]
    rows.append(run_row(TARGET_RATE, SCENARIOS[1], alone(defaults)))
    return scale_outcome(rows)


def run_row(rate: int, scenario: Scenario, sizing: Sizing, seed: int = 33) -> Row:
    """One poller; again fanned out when its CPU passed the load the product fans out at."""
    row = run_pollers(rate, scenario, sizing, 1, seed)
    shards = deployed_poller_settings().table.due_shards
    groups = min(sizing.poller_helpers + 1, shards)
    if groups == 1 or row.poller_cpu_busy <= FAN_OUT_LOAD_SHARE:
        return row
    return run_pollers(rate, scenario, sizing, groups, seed)


def run_pollers(rate: int, scenario: Scenario, sizing: Sizing, groups: int, seed: int) -> Row:
    sample = max(groups, rate // SIMULATED_RATE)
    # One poller's share of the stack's: 1 for a group's slice, less when sampled further.
    share = groups / sample
    settings = deployed_poller_settings()
    policy = dataclasses.replace(
        settings.policy,
        max_requests_per_sweep=max(1, int(settings.policy.max_requests_per_sweep * share)),
        ids_per_request=max(1, int(settings.policy.ids_per_request * share)),
    )
    clock = SimClock(START, sizing.poller_memory_mb / MB_PER_VCPU * share)
    provider = ProviderModel(clock, seed, round(policy.request_workers / share))
    shards = settings.table.due_shards
    store = CapacityStore(clock, shards, sample, query_shards=math.ceil(shards / groups))
    issued = SubmitSettings.from_env(placeholder_environment("SubmitFunction")).pingbacks
    pending = PendingTasks(issued.callback_timeout_seconds, issued.expected_solve_seconds, clock)
    world = World(clock, provider, store, pending, scenario, random.Random(seed))
    interval = sample / rate
    arrivals = range(int(scenario.submit_seconds / interval))
    for index, (kind, request) in zip(arrivals, _mix(), strict=False):
        clock.at(START + index * interval, world.submitter(kind, request))
    poller = PollerService(
        store,
        provider,
        policy,
        SolveTimes(default_seconds=settings.expected_solve_seconds),
        clock=clock,
        sleep=clock.sleep,
    )
    ends = START + scenario.submit_seconds + RETENTION_SECONDS + 2 * SCHEDULE_SECONDS
    invocations, run_seconds, schedule = 0, 0.0, START
    while schedule < ends:
        clock.run_until(schedule)
        started = clock.now
        poller.run(functools.partial(_left, started + INVOCATION_SECONDS, clock))
        invocations += 1
        run_seconds += clock.now - started
        store.forget_finished()
        schedule = _next_start(clock.now, groups)
    return world.row(rate, sizing, sample, invocations, run_seconds, groups)


def _next_start(now: float, groups: int) -> float:
    """Alone, the schedule's next minute; a group's poller, as soon as an asynchronous Invoke
    starts it (the main holder's next sweep covers the group meanwhile, and starts it)."""
    if groups > 1:
        return now + HELPER_START_SECONDS
    return START + (math.floor((now - START) / SCHEDULE_SECONDS) + 1) * SCHEDULE_SECONDS


def _left(deadline: float, clock: SimClock) -> float:
    return deadline - clock.now


def _mix() -> Iterator[tuple[str, CaptchaRequest]]:
    slots = [
        (name, request_from_json(document))
        for name, share, document in KIND_MIX
        for _ in range(share)
    ]
    random.Random(20).shuffle(slots)
    return itertools.cycle(slots)


class World:
    """The tasks' lives: submitted, solved, their pingback delivered or lost, stored when."""

    def __init__(
        self,
        clock: SimClock,
        provider: ProviderModel,
        store: CapacityStore,
        pending: PendingTasks,
        scenario: Scenario,
        randomness: random.Random,
    ) -> None:
        self._clock, self._provider, self._store = clock, provider, store
        self._scenario, self._random = scenario, randomness
        dead_letters = FakeDeadLetterQueue()
        self._submits = SubmitService(store, provider, dead_letters, pending, sleep=clock.sleep)
        self._callbacks = CallbackService(store, dead_letters)
        self.kind_of: dict[str, str] = {}
        self.pingbacks = 0

    def submitter(self, kind: str, request: CaptchaRequest) -> Callable[[float], None]:
        def submit(at: float) -> None:
            pingback = issue_pingback(PUBLIC_BASE_URL, CALLBACK_SECRET, at)
            task_id = self._submits.submit(request, pingback).task_id
            self.kind_of[task_id] = kind
            lost = self._scenario.pingback_lost(at - START, self._random.random())
            if not lost:
                finished = self._provider.tasks[task_id].finished_at
                delay = self._random.uniform(*PINGBACK_DELAY_SECONDS)
                self._clock.at(finished + delay, self._pingback(task_id, pingback.nonce))

        return submit

    def _pingback(self, task_id: str, nonce: str) -> Callable[[float], None]:
        def deliver(at: float) -> None:
            if task_id not in self._store.tasks:
                return  # stored and gone: the table would answer DUPLICATE
            self.pingbacks += 1
            code = self._provider.tasks[task_id].code
            self._callbacks.receive(
                TaskResult(task_id, code, DeliveryPath.CALLBACK, at, nonce=nonce)
            )

        return deliver

    def row(
        self,
        rate: int,
        sizing: Sizing,
        sample: int,
        invocations: int,
        run_seconds: float,
        pollers: int,
    ) -> Row:
        store, provider = self._store, self._provider
        tasks = len(self.kind_of)
        ages: dict[str, list[float]] = defaultdict(list)
        token_ages: list[float] = []
        lifetimes = store.lifetimes
        for task_id, kind in self.kind_of.items():
            stored = store.stored_at.get(task_id)
            if stored is None:
                continue
            provider_task = provider.tasks[task_id]
            age = max(0.0, stored - provider_task.finished_at)
            ages[kind].append(age)
            if lifetime_seconds(lifetimes, provider_task.method) is not None:
                token_ages.append(age)
        busiest_minute = max(per_minute(provider.requests_by_second).values(), default=0)
        writes, reads = store.units
        pingbacks_per_second = self.pingbacks * sample / self._scenario.submit_seconds
        # The simulated poller is one of ``pollers`` alike, for the whole stack's tasks.
        poller_runs = invocations * pollers / (tasks * sample)
        per_task = Usage(
            api_requests=1 + self.pingbacks / tasks,
            lambda_requests=1 + self.pingbacks / tasks + poller_runs,
            lambda_gb_seconds=MEMORY_GB
            * (SUBMIT_SECONDS_EACH + CALLBACK_SECONDS_EACH * self.pingbacks / tasks)
            + sizing.poller_memory_mb / 1024 * run_seconds * pollers / (tasks * sample),
            write_units=writes / tasks,
            read_units=reads / tasks,
            scheduler_invocations=invocations / (tasks * sample),
        )
        return Row(
            rate=rate,
            scenario=self._scenario.name,
            sizing=sizing,
            sample=sample,
            tasks=tasks * sample,
            lost=(tasks - len(store.stored_at)) * sample,
            age_by_kind={
                kind: (percentile(values, 0.5), percentile(values, 0.95))
                for kind, values in sorted(ages.items())
            },
            token_age_p95=percentile(token_ages, 0.95),
            res_requests_per_second=busiest_minute * sample / 60,
            res_limit_share=provider.worst_request_share(sample),
            table_requests_per_task=store.requests / tasks,
            hottest=store.hottest(),
            concurrency={
                "submit": rate * SUBMIT_SECONDS_EACH,
                "callback": pingbacks_per_second * CALLBACK_SECONDS_EACH,
                "poller": float(pollers),
            },
            usd_per_million=sum(cost_by_service(per_task.times(1_000_000), PRICES).values()),
            route_shares={
                # A submit is one request on a task route (POST /tasks or in.php).
                "ApiThrottlingRateLimit": rate / sizing.task_route_rate,
                "CallbackThrottlingRateLimit": pingbacks_per_second / sizing.callback_route_rate,
            },
            poller_cpu_busy=self._clock.poller_cpu_seconds
            / (sizing.poller_memory_mb / MB_PER_VCPU * pollers / sample)
            / max(run_seconds, 1.0),
            pollers=pollers,
        )


def scale_outcome(rows: Sequence[Row]) -> SectionOutcome:
    targets = [row for row in rows if row.rate == TARGET_RATE and row.scenario == "b"]
    headlines = [
        Headline(
            f"{TARGET_RATE} tasks/s, every pingback lost 10 min, {row.sizing.name}",
            _judged(row),
            f"0 lost, token p95 < {TOKEN_AGE_TARGET_SECONDS:.0f} s, inside every limit",
            row.met,
        )
        for row in targets
    ]
    table = markdown_table(
        [
            "tasks/s",
            "pingbacks",
            "deployed",
            "sampled",
            "tasks",
            "lost",
            "token age p95",
            "res.php/s (share of limit)",
            "table requests/task",
            "hottest partition",
            "Lambda in flight (submit, callback, poller)",
            "USD / M tasks",
            "verdict",
            "gives out first",
        ],
        [
            [
                row.rate,
                next(s.lost for s in SCENARIOS if s.name == row.scenario),
                row.sizing.name,
                f"1/{row.sample}" if row.sample > 1 else "no",
                row.tasks,
                row.lost,
                _seconds(row.token_age_p95),
                f"{row.res_requests_per_second:.1f} ({row.res_limit_share:.0%})",
                number(row.table_requests_per_task, 1),
                f"{row.hottest.partition} {row.hottest.units_per_second:.0f}"
                f"/{row.hottest.limit:.0f}",
                ", ".join(f"{value:.1f}" for value in row.concurrency.values()),
                f"{row.usd_per_million:.0f}",
                "met" if row.met else "MISSED",
                "; ".join(row.gives_out) or "-",
            ]
            for row in rows
        ],
    )
    kinds = sorted({kind for row in rows for kind in row.age_by_kind})
    ages = markdown_table(
        ["tasks/s", "pingbacks", "deployed", *kinds],
        [
            [
                row.rate,
                row.scenario,
                row.sizing.name,
                *(
                    "/".join(_seconds(v) for v in row.age_by_kind.get(kind, (None, None)))
                    for kind in kinds
                ),
            ]
            for row in rows
        ],
    )
    return SectionOutcome(
        key=KEY,
        title=TITLE,
        headlines=headlines,
        details=[
            *table,
            "",
            "Answer age at the table (stored minus solved), p50/p95 per kind:",
            "",
            *ages,
        ],
        data={
            "rows": [
                {
                    **dataclasses.asdict(row),
                    "hottest": dataclasses.asdict(row.hottest),
                    "sizing": dataclasses.asdict(row.sizing),
                    "met": row.met,
                    "gives_out": row.gives_out,
                }
                for row in rows
            ]
        },
    )


def _judged(row: Row) -> str:
    figures = f"{row.lost} lost, p95 {_seconds(row.token_age_p95)}"
    return f"{figures}; gives out: {row.gives_out[0]}" if row.gives_out else figures


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
