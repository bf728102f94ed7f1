"""Figure 8: what differs per CAPTCHA kind when every pingback is lost: when the poller first
checks, how old the answer is when the stack has it, how many res.php requests recover it, and
how long the worker may use it.

The real PendingTasks rule (each kind's first check), PollerService, CaptchaAiClient and
DynamoDB store (moto) at the template's default parameters, against the CaptchaAI simulator
(solve times lognormal, median 25 s, scaled per kind as the simulator does: images and BLS in
seconds, browser challenges in tens of seconds). The kinds and documents are the chaos run's
(infra/chaos/kind_mix.py), TASKS_PER_KIND each, submitted interleaved. Time runs TIME_SCALE
times faster than the wall clock: the simulator's solve times are scaled, and the poller is driven
by a clock that runs as fast (one invocation a minute, its sweeps, its backoff); the real time
its HTTP requests and table writes take counts TIME_SCALE times over, so ages are pessimistic.
Ages are measured against the simulator's truth (when it really finished each task).
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import boto3
from moto import mock_aws

from bench.freshness import percentile
from bench.outcome import Headline, SectionOutcome, markdown_table, number
from bench.provider import API_KEY
from bench.template_facts import deployed_poller_settings, new_task_store
from infra.chaos.kind_mix import KIND_MIX
from infra.moto_atomic import make_dynamodb_writes_atomic
from infra.project_template import placeholder_environment
from infra.simulator import Faults, Simulator, SimulatorConfig, SolveTimeDistribution
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.logic.get_task import worker_view
from pingback_guard.logic.poll_schedule import SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.submit import PendingTasks
from pingback_guard.provider.answers import ProviderAnswer
from pingback_guard.provider.captchaai import CaptchaAiClient
from pingback_guard.settings.submit import SubmitSettings

KEY = "kinds"
TITLE = "8. Per kind, every pingback lost: first check, answer age, res.php requests, lifetime"
REGION = "us-east-1"
TASKS_PER_KIND = 8
TIME_SCALE = 5.0
SUBMIT_SPREAD_SECONDS = 30.0
GIVE_UP_SECONDS = 400.0
INVOCATION_SECONDS = 60.0
"""The poller is scheduled every minute (PollRateMinutes) with a minute's timeout."""


@dataclass(frozen=True)
class KindTask:
    """One task's fate (virtual seconds, the poller's clock)."""

    kind: str
    submitted_at: float
    finished_at: float
    """When the simulator really finished it."""
    first_check_at: float | None
    received_at: float | None
    """When the answer reached the poller; None: the stack did not store it (lost)."""
    exact: bool
    """The stored answer is the provider's, byte for byte."""
    fits: bool
    res_requests: float
    """res.php requests that asked for it, each shared by the ids it asked for."""
    checks: int
    usable_for: float | None
    """usable_until - the earliest finish the stack claims; None: no lifetime of its own."""


@dataclass(frozen=True)
class KindFigures:
    tasks: int
    lost: int
    wrong: int
    misfits: int
    solve_p50: float
    first_check_p50: float | None
    age_p50: float | None
    age_p95: float | None
    res_requests_per_task: float | None
    checks_per_task: float
    usable_for: float | None


def kind_figures(tasks: Sequence[KindTask]) -> dict[str, KindFigures]:
    by_kind: dict[str, list[KindTask]] = {}
    for task in tasks:
        by_kind.setdefault(task.kind, []).append(task)
    return {kind: _figures(group) for kind, group in by_kind.items()}


def _figures(tasks: Sequence[KindTask]) -> KindFigures:
    found = [task for task in tasks if task.received_at is not None]
    ages = [task.received_at - task.finished_at for task in found if task.received_at is not None]
    firsts = [t.first_check_at - t.submitted_at for t in tasks if t.first_check_at is not None]
    lifetimes = {round(task.usable_for) for task in found if task.usable_for is not None}
    return KindFigures(
        tasks=len(tasks),
        lost=len(tasks) - len(found),
        wrong=sum(1 for task in found if not task.exact),
        misfits=sum(1 for task in found if not task.fits),
        solve_p50=statistics.median(task.finished_at - task.submitted_at for task in tasks),
        first_check_p50=statistics.median(firsts) if firsts else None,
        age_p50=percentile(ages, 0.5),
        age_p95=percentile(ages, 0.95),
        res_requests_per_task=sum(t.res_requests for t in found) / len(found) if found else None,
        checks_per_task=sum(task.checks for task in tasks) / len(tasks),
        # One lifetime per kind: the smallest, should tasks disagree.
        usable_for=float(min(lifetimes)) if lifetimes else None,
    )


class ScaledClock:
    """Epoch seconds running `scale` times faster than the wall clock from now on."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.origin = time.time()

    def now(self) -> float:
        return self.virtual(time.time())

    def virtual(self, real: float) -> float:
        return self.origin + (real - self.origin) * self.scale

    def sleep(self, seconds: float) -> None:
        time.sleep(self.real_seconds(seconds))

    def until(self, moment: float) -> float:
        return moment - self.now()

    def real_seconds(self, seconds: float) -> float:
        return max(0.0, seconds) / self.scale


class CountingProvider(CaptchaAiClient):
    """The real client, noting which ids each res.php request asked for and when."""

    def __init__(self, base_url: str, clock: ScaledClock) -> None:
        super().__init__(base_url, lambda: API_KEY)
        self._clock = clock
        self._lock = threading.Lock()
        self.shares: dict[str, float] = {}
        self.checks: Counter[str] = Counter()
        self.first_check_at: dict[str, float] = {}
        self.answered_at: dict[str, float] = {}

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        now = self._clock.now()
        with self._lock:
            for task_id in task_ids:
                self.shares[task_id] = self.shares.get(task_id, 0.0) + 1 / len(task_ids)
                self.checks[task_id] += 1
                self.first_check_at.setdefault(task_id, now)
        answers = super().get_results(task_ids)
        # When the answer reached the poller: a sweep's own clock reading is taken before its
        # requests, and a sweep of one-id requests takes a while.
        answered = self._clock.now()
        with self._lock:
            self.answered_at.update((i, answered) for i, a in answers.items() if a.is_final)
        return answers


def measure_kind_freshness() -> SectionOutcome:
    make_dynamodb_writes_atomic()
    config = SimulatorConfig(
        api_key=API_KEY,
        seed=20261202,
        time_scale=TIME_SCALE,
        solve_time=SolveTimeDistribution(),  # lognormal, median 25 s, 5..180 s
        unsolvable_rate=0.0,
        result_retention_seconds=600.0,
        faults=Faults(pingback_drop_rate=1.0),
    )
    with Simulator(config) as simulator, mock_aws():
        return kind_freshness_outcome(kind_figures(_run(simulator)))


def _run(simulator: Simulator) -> list[KindTask]:
    clock = ScaledClock(TIME_SCALE)
    client = boto3.session.Session(region_name=REGION).client("dynamodb")
    store = new_task_store(client, "pingback-guard-bench-kinds")
    provider = CountingProvider(simulator.base_url, clock)
    settings = deployed_poller_settings()
    issued = SubmitSettings.from_env(placeholder_environment("SubmitFunction")).pingbacks
    pending = PendingTasks(
        issued.callback_timeout_seconds, issued.expected_solve_seconds, clock=clock.now
    )
    poller = PollerService(
        store,
        provider,
        settings.policy,
        SolveTimes(default_seconds=settings.expected_solve_seconds),
        clock=clock.now,
        sleep=clock.sleep,
    )
    submitted: dict[str, tuple[str, float]] = {}
    done = threading.Event()
    scheduler = threading.Thread(target=_invoke_every_minute, args=(poller, clock, done))
    try:
        for index, (kind, request) in enumerate(_interleaved()):
            task_id = provider.submit(request, pingback_url="")
            task = pending.new(task_id, request, nonce=None, owner=None)
            store.record_submission(task)
            submitted[task_id] = (kind, task.submitted_at)
            if index == 0:
                # The first invocation sees work: an idle one would leave it a minute.
                scheduler.start()
            clock.sleep(SUBMIT_SPREAD_SECONDS / (TASKS_PER_KIND * len(KIND_MIX)))
        deadline = clock.now() + GIVE_UP_SECONDS
        while clock.now() < deadline and store.next_due_at(0.0, deadline) is not None:
            clock.sleep(INVOCATION_SECONDS / 4)
    finally:
        done.set()
        if scheduler.ident is not None:
            scheduler.join()
    truth = {str(task["id"]): task for task in simulator.tasks()}
    return [
        _task(task_id, kind, at, truth[task_id], store, provider, clock)
        for task_id, (kind, at) in submitted.items()
    ]


def _interleaved() -> list[tuple[str, CaptchaRequest]]:
    """TASKS_PER_KIND tasks of each kind of the mix, one of each in turn."""
    kinds = [(name, request_from_json(document)) for name, _, document in KIND_MIX]
    return [kind for _ in range(TASKS_PER_KIND) for kind in kinds]


def _invoke_every_minute(poller: PollerService, clock: ScaledClock, done: threading.Event) -> None:
    while not done.is_set():
        ends = clock.now() + INVOCATION_SECONDS
        poller.run(functools.partial(clock.until, ends))
        done.wait(clock.real_seconds(clock.until(ends)))


def _task(
    task_id: str,
    kind: str,
    submitted_at: float,
    truth: Mapping[str, Any],
    store: DynamoDbTaskStore,
    provider: CountingProvider,
    clock: ScaledClock,
) -> KindTask:
    stored = store.get(task_id)
    view = worker_view(stored, clock.now()) if stored is not None else {}
    solved = view.get("status") == "SOLVED"
    usable_until, earliest = view.get("usable_until"), view.get("finished_at_earliest")
    return KindTask(
        kind=kind,
        submitted_at=submitted_at,
        finished_at=clock.virtual(float(truth["finished_at"])),
        first_check_at=provider.first_check_at.get(task_id),
        received_at=provider.answered_at.get(task_id) if solved else None,
        exact=view.get("solution") == truth["code"],
        fits=view.get("answer_fits") is not False,
        res_requests=provider.shares.get(task_id, 0.0),
        checks=provider.checks[task_id],
        usable_for=(
            float(usable_until) - float(earliest)
            if usable_until is not None and earliest is not None
            else None
        ),
    )


def kind_freshness_outcome(figures: Mapping[str, KindFigures]) -> SectionOutcome:
    lost = sum(row.lost for row in figures.values())
    wrong = sum(row.wrong for row in figures.values())
    tasks = sum(row.tasks for row in figures.values())
    aged = {kind: row.age_p95 for kind, row in figures.items() if row.age_p95 is not None}
    headlines = [
        Headline(
            "Every pingback lost, every kind: tasks lost / answers not exactly the provider's",
            f"{lost} / {wrong} of {tasks}",
            "0 / 0",
            lost == 0 and wrong == 0 and tasks > 0,
        )
    ]
    if aged:
        youngest, oldest = min(aged, key=aged.__getitem__), max(aged, key=aged.__getitem__)
        headlines.append(
            Headline(
                "Every pingback lost: p95 answer age when recovered, youngest .. oldest kind",
                f"{youngest} {number(aged[youngest], 1)} s .. {oldest} {number(aged[oldest], 1)} s",
            )
        )
    return SectionOutcome(
        key=KEY,
        title=TITLE,
        data={kind: asdict(row) for kind, row in figures.items()},
        headlines=headlines,
        details=_details(figures),
    )


def _details(figures: Mapping[str, KindFigures]) -> list[str]:
    rows = [
        [
            kind,
            str(row.tasks),
            f"{row.lost} / {row.wrong} / {row.misfits}",
            number(row.solve_p50, 1),
            _seconds(row.first_check_p50),
            f"{_seconds(row.age_p50)} / {_seconds(row.age_p95)}",
            "-" if row.res_requests_per_task is None else number(row.res_requests_per_task),
            number(row.checks_per_task, 1),
            "none" if row.usable_for is None else f"{number(row.usable_for, 0)} s",
        ]
        for kind, row in sorted(figures.items())
    ]
    return [
        f"{TASKS_PER_KIND} tasks of each kind of the chaos mix, every pingback lost, recovered by"
        f" the real poller at the template's defaults (time {TIME_SCALE:g}x faster; seconds are"
        " the provider's). A res.php request asking for n ids counts 1/n to each: token kinds"
        " share `ids=` batches, images and GeeTest (answers that may hold `|`) are asked one id"
        " per request.",
        "",
        *markdown_table(
            [
                "kind",
                "tasks",
                "lost / wrong / misfit",
                "solve p50 s",
                "first check p50 s",
                "age when recovered p50 / p95 s",
                "res.php / task",
                "checks / task",
                "usable for",
            ],
            rows,
        ),
    ]


def _seconds(value: float | None) -> str:
    return "-" if value is None else number(value, 1)
