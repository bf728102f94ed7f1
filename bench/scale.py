"""Figure 9: where the nets stop keeping their promise as load grows.

The stack's own services on a fake clock (bench/scale_model.py): SubmitService (in.php, then
the task PENDING with each kind's first check), CallbackService (a pingback's result write, the
replay's too) and PollerService at the template's default parameters, run as Lambda runs the
poller (bench/scale_fleet.py): a scheduled invocation every minute, taking over from the holder,
and the helpers its main holder starts under load (logic/poller_fan_out.py: their leases, the
hand-over of held checks, the load and backlog triggers), against a provider model (res.php
0.2-1 s, the simulator's solve times per kind, results kept 600 s) and a table model charging
DynamoDB's per-partition throughput. Tasks come at a steady rate in the chaos mix
(infra/chaos/kind_mix.py). Two scenarios a rate: (a) 1% of pingbacks lost, for SUBMIT_SECONDS;
(b) every pingback lost for OUTAGE_SECONDS, then delivered again for RESTORED_SECONDS. Each row
runs until every task's result is stored or forgotten.

Sampled rows: above SIMULATED_RATE tasks a second, a row runs a 1/k slice of the stack (k =
rate / SIMULATED_RATE): every k-th task, each poller invocation with 1/k of its CPU, of its
request workers (1/k of its res.php throughput), of its requests per sweep and ids per request;
what the whole stack's poller does once whatever its tasks (a sweep's Query of each shard, the
leases) is 1/k of one in the slice (bench/scale_model.py, CapacityStore); the table's, the
provider's and the routes' loads counted k times. Each invocation of the slice
stands for one of the stack, with 1/k of its resources for 1/k of its tasks.

Routes (API Gateway): submits on the task routes; pingbacks through the callback route's token
bucket (refused ones are lost pingbacks, recovered by the nets); the workers' GETs for each way
of waiting (push: none; paced: one when the POST's hint says, then one after each of the stack's
res.php checks; every second: one a second until the answer is at the table). A row is judged for
each way of waiting. Not modelled: the GET read-through's own res.php checks; the table and
Lambda never throttle here, their loads are compared with their limits instead.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import defaultdict
from collections.abc import Callable, Iterator

from bench.cost import PRICES, RESULT_EVENT, Usage, cost_by_service
from bench.freshness import percentile
from bench.outcome import SectionOutcome
from bench.scale_fleet import SCHEDULE_SECONDS, PollerFleet
from bench.scale_model import RETENTION_SECONDS, CapacityStore, ProviderModel, SimClock, per_minute
from bench.scale_rows import (
    SUBMIT_SECONDS_EACH,
    WAYS_OF_WAITING,
    Row,
    Scenario,
    Sizing,
    TokenBucket,
    scale_outcome,
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
from pingback_guard.logic.poller_fan_out import MB_PER_VCPU, FanOutPolicy, PollerFanOut
from pingback_guard.logic.submit import PendingTasks, SubmitService, issue_pingback
from pingback_guard.settings.submit import SubmitSettings
from tests.fakes import FakeDeadLetterQueue

KEY = "scale"
TITLE = "9. Scale: the nets at 10, 100, 300 and 1,000 tasks a second"
RATES = (10, 100, 300, 1000)
SIMULATED_RATE = 50
SUBMIT_SECONDS = 300.0
LOST_FRACTION = 0.01
OUTAGE_SECONDS = 600.0
RESTORED_SECONDS = 120.0
PINGBACK_DELAY_SECONDS = (0.1, 1.0)
ONE_VCPU_MB = MB_PER_VCPU
CALLBACK_SECONDS_EACH = 0.05
MEMORY_GB = 128 / 1024
START = 1_800_000_000.0
# An example plan size, not a CaptchaAI price-list fact: an account's cap is what its
# `threadsinfo` answers (captchaai 1.0.1, client.py reads {"threads": N, "working_threads": M}).
EXAMPLE_ACCOUNT_THREADS = 1000
PUBLIC_BASE_URL = "https://pingbacks.example.test"
CALLBACK_SECRET = "PgBenchScaleCallbackSecret00000000000001"

SCENARIOS = (
    Scenario("a", "1% of pingbacks lost", SUBMIT_SECONDS, LOST_FRACTION, 0.0),
    Scenario(
        "b",
        "every pingback lost 10 min, then restored",
        OUTAGE_SECONDS + RESTORED_SECONDS,
        0.0,
        OUTAGE_SECONDS,
    ),
)


def default_sizing() -> Sizing:
    template = project_template()
    return Sizing(
        "defaults",
        function_memory_mb(template, "PollerFunction"),
        float(parameter_default(template, "ApiThrottlingRateLimit")),
        float(parameter_default(template, "CallbackThrottlingRateLimit")),
        float(parameter_default(template, "CallbackThrottlingBurstLimit")),
        int(parameter_default(template, "PollerHelpers")),
        int(parameter_default(template, "DueShards")),
    )


def alone(sizing: Sizing) -> Sizing:
    """The same deployment with PollerHelpers 0: one poller invocation at a time."""
    return dataclasses.replace(sizing, name=f"{sizing.name}, PollerHelpers 0", poller_helpers=0)


def one_vcpu(sizing: Sizing) -> Sizing:
    """The same deployment with PollerMemorySize 1769 (one vCPU an invocation)."""
    return dataclasses.replace(
        sizing, name=f"{sizing.name}, PollerMemorySize {ONE_VCPU_MB}", poller_memory_mb=ONE_VCPU_MB
    )


def measure_scale() -> SectionOutcome:
    defaults = default_sizing()
    rows = [
        judged
        for rate in RATES
        for scenario in SCENARIOS
        for sizing in (defaults, one_vcpu(defaults))
        for judged in run_row(rate, scenario, sizing)
    ]
    rows += run_row(100, SCENARIOS[1], alone(defaults))
    return scale_outcome(rows + with_provider_accounts(rows, defaults))


def with_provider_accounts(rows: list[Row], defaults: Sizing) -> list[Row]:
    """The defaults' 1%-lost rows at 100 and 1,000 tasks a second (push workers) judged again
    with one and with two provider accounts of EXAMPLE_ACCOUNT_THREADS threads each: the
    provider's load does not depend on the stack's sizing, only whether it fits."""
    accounts = [
        dataclasses.replace(
            defaults,
            name=f"{count} provider account(s) of {EXAMPLE_ACCOUNT_THREADS} threads",
            provider_threads=(EXAMPLE_ACCOUNT_THREADS,) * count,
        )
        for count in (1, 2)
    ]
    return [
        dataclasses.replace(row, sizing=sizing)
        for row in rows
        if row.rate in (100, 1000)
        and row.scenario == "a"
        and row.waiting == "push"
        and row.sizing == defaults
        for sizing in accounts
    ]


def run_row(rate: int, scenario: Scenario, sizing: Sizing, seed: int = 33) -> list[Row]:
    """One simulated run, judged for each way of waiting."""
    sample = max(1, rate // SIMULATED_RATE)
    share = 1 / sample
    settings = deployed_poller_settings()
    policy = dataclasses.replace(
        settings.policy,
        max_requests_per_sweep=max(1, int(settings.policy.max_requests_per_sweep * share)),
        ids_per_request=max(1, int(settings.policy.ids_per_request * share)),
    )
    vcpu_share = sizing.poller_memory_mb / MB_PER_VCPU * share
    clock = SimClock(START, vcpu_share)
    provider = ProviderModel(clock, seed, policy.request_workers * share)
    store = CapacityStore(clock, sizing.due_shards, sample)
    issued = SubmitSettings.from_env(placeholder_environment("SubmitFunction")).pingbacks
    pending = PendingTasks(issued.callback_timeout_seconds, issued.expected_solve_seconds, clock)
    bucket = TokenBucket(
        sizing.callback_route_rate * share, sizing.callback_route_burst * share, START
    )
    world = World(clock, provider, store, pending, scenario, random.Random(seed), bucket)
    interval = sample / rate
    arrivals = range(int(scenario.submit_seconds / interval))
    for index, (kind, request) in zip(arrivals, _mix(), strict=False):
        clock.at(START + index * interval, world.submitter(kind, request))

    def new_service(fan_out: PollerFanOut) -> PollerService:
        return PollerService(
            store,
            provider,
            policy,
            SolveTimes(default_seconds=settings.expected_solve_seconds),
            clock=clock,
            sleep=fleet.sleep,
            fan_out=fan_out,
            cpu_clock=lambda: clock.poller_cpu_seconds,
        )

    fleet = PollerFleet(
        clock,
        store,
        new_service,
        FanOutPolicy(sizing.poller_helpers, vcpu_share),
        policy.sweep_interval_seconds,
    )
    fleet.run(START, START + scenario.submit_seconds + RETENTION_SECONDS + 2 * SCHEDULE_SECONDS)
    return world.rows(rate, sizing, sample, fleet)


def _mix() -> Iterator[tuple[str, CaptchaRequest]]:
    slots = [
        (name, request_from_json(document))
        for name, share, document in KIND_MIX
        for _ in range(share)
    ]
    random.Random(20).shuffle(slots)
    return itertools.cycle(slots)


class World:
    """The tasks' lives: submitted, solved, their pingback delivered, refused or lost, stored
    when."""

    def __init__(
        self,
        clock: SimClock,
        provider: ProviderModel,
        store: CapacityStore,
        pending: PendingTasks,
        scenario: Scenario,
        randomness: random.Random,
        callback_route: TokenBucket,
    ) -> None:
        self._clock, self._provider, self._store = clock, provider, store
        self._scenario, self._random = scenario, randomness
        self._callback_route = callback_route
        dead_letters = FakeDeadLetterQueue()
        self._submits = SubmitService(store, provider, dead_letters, pending, sleep=clock.sleep)
        self._callbacks = CallbackService(store, dead_letters)
        self.kind_of: dict[str, str] = {}
        self.submitted_at: dict[str, float] = {}
        self.pingbacks = 0
        self.pingbacks_refused = 0

    def submitter(self, kind: str, request: CaptchaRequest) -> Callable[[float], None]:
        def submit(at: float) -> None:
            pingback = issue_pingback(PUBLIC_BASE_URL, CALLBACK_SECRET, at)
            task_id = self._submits.submit(request, pingback).task_id
            self.kind_of[task_id] = kind
            self.submitted_at[task_id] = at
            lost = self._scenario.pingback_lost(at - START, self._random.random())
            if not lost:
                finished = self._provider.tasks[task_id].finished_at
                delay = self._random.uniform(*PINGBACK_DELAY_SECONDS)
                self._clock.at(finished + delay, self._pingback(task_id, pingback.nonce))

        return submit

    def _pingback(self, task_id: str, nonce: str) -> Callable[[float], None]:
        def deliver(at: float) -> None:
            if not self._callback_route.take(at):
                # API Gateway answers 429: the provider does not send it again.
                self.pingbacks_refused += 1
                return
            if task_id not in self._store.tasks:
                return  # stored and gone: the table would answer DUPLICATE
            self.pingbacks += 1
            code = self._provider.tasks[task_id].code
            self._callbacks.receive(
                TaskResult(task_id, code, DeliveryPath.CALLBACK, at, nonce=nonce)
            )

        return deliver

    def solving_at_once(self) -> int:
        """The most tasks submitted and not yet solved at one moment (the slice's)."""
        edges = sorted(
            edge
            for task_id, at in self.submitted_at.items()
            for edge in ((at, 1), (self._provider.tasks[task_id].finished_at, -1))
        )
        solving = most = 0
        for _, change in edges:
            solving += change
            most = max(most, solving)
        return most

    def gets_per_task(self) -> dict[str, float]:
        """Worker GETs of a task for each way of waiting, until its answer is at the table (a
        task never stored: until the provider forgets it)."""
        checks = self._provider.checks
        waits = [
            self._store.stored_at.get(task_id, at + RETENTION_SECONDS) - at
            for task_id, at in self.submitted_at.items()
        ]
        tasks = max(1, len(waits))
        return {
            "push": 0.0,
            "paced": sum(1 + checks[task_id] for task_id in self.submitted_at) / tasks,
            "every_second": sum(int(wait) + 1 for wait in waits) / tasks,
        }

    def rows(self, rate: int, sizing: Sizing, sample: int, fleet: PollerFleet) -> list[Row]:
        store, provider, scenario = self._store, self._provider, self._scenario
        tasks = max(1, len(self.kind_of))
        ages: dict[str, list[float]] = defaultdict(list)
        token_ages: list[float] = []
        for task_id, kind in self.kind_of.items():
            stored = store.stored_at.get(task_id)
            if stored is None:
                continue
            provider_task = provider.tasks[task_id]
            age = max(0.0, stored - provider_task.finished_at)
            ages[kind].append(age)
            if lifetime_seconds(store.lifetimes, provider_task.method) is not None:
                token_ages.append(age)
        busiest_minute = max(per_minute(provider.requests_by_second).values(), default=0)
        writes, reads = store.units
        offered = (self.pingbacks + self.pingbacks_refused) * sample / scenario.submit_seconds
        run_seconds = fleet.running_seconds(START, self._clock.now)
        whole = tasks * sample
        per_task = RESULT_EVENT + Usage(
            api_requests=1 + self.pingbacks / tasks,
            lambda_requests=1 + self.pingbacks / tasks + len(fleet.invocations) / whole,
            lambda_gb_seconds=MEMORY_GB
            * (SUBMIT_SECONDS_EACH + CALLBACK_SECONDS_EACH * self.pingbacks / tasks)
            + sizing.poller_memory_mb / 1024 * run_seconds / whole,
            write_units=writes / tasks,
            read_units=reads / tasks,
            scheduler_invocations=sum(invocation.group is None for invocation in fleet.invocations)
            / whole,
        )
        window = START + (scenario.outage_seconds or scenario.submit_seconds)
        cpu = sum(
            seconds
            for second, seconds in self._clock.poller_cpu_by_second.items()
            if second < window
        )
        vcpu_share = sizing.poller_memory_mb / MB_PER_VCPU / sample
        busy = cpu / vcpu_share / max(fleet.running_seconds(START, window), 1.0)
        held = Row(
            rate=rate,
            scenario=scenario.name,
            sizing=sizing,
            waiting="push",
            sample=sample,
            tasks=whole,
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
                "callback": offered * CALLBACK_SECONDS_EACH,
                "poller": float(fleet.most_at_once()),
            },
            usd_per_million=0.0,
            route_rates={"submit": float(rate), "GET": 0.0, "callback": offered},
            pingbacks_refused=self.pingbacks_refused * sample,
            poller_cpu_busy=busy,
            pollers=fleet.most_at_once(),
            poller_invocations=len(fleet.invocations),
            provider_threads_needed=self.solving_at_once() * sample,
        )
        gets = self.gets_per_task()
        return [
            dataclasses.replace(
                held,
                waiting=way,
                route_rates={**held.route_rates, "GET": rate * gets[way]},
                gets_per_task=gets[way],
                usd_per_million=sum(
                    cost_by_service(
                        (per_task + Usage(api_requests=gets[way], lambda_requests=gets[way])).times(
                            1_000_000
                        ),
                        PRICES,
                    ).values()
                ),
            )
            for way in WAYS_OF_WAITING
        ]
