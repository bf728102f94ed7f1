"""One chaos run: simulator + local stack (+ the seed's baseline), faults on a timeline, a
steady workload, a drain, and a verdict read from the table, the queues and the simulator."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.chaos.accounts import accounts_report, stack_account_keys
from infra.chaos.alarm_check import (
    AlarmFaultInjector,
    AlarmVerdict,
    count_notifications,
    is_clean,
    judge_alarms,
    settle_alarms,
    settle_seconds,
    subscribe_queue_to_alarms,
    wait_until_up,
)
from infra.chaos.async_faults import AsyncFaultRun
from infra.chaos.baseline import SeedBaseline
from infra.chaos.checker import (
    Verdict,
    emitted_metrics,
    figures,
    figures_by_kind,
    forged_decisions,
    forged_provisional,
    table_items,
    throughput,
    unanswered_submits,
    verdict,
)
from infra.chaos.drain import DrainOutcome, DrainPolicy, Observation, wait_until_quiet
from infra.chaos.kind_mix import PAGE_URL, SITEKEY
from infra.chaos.result_events import (
    EVENT_DUPLICATE_RATE,
    result_events_report,
    wait_for_result_events,
)
from infra.chaos.scenario import Scenario
from infra.chaos.waiting import (
    PATIENCE_SECONDS,
    WaitingWorkers,
    token_age_at_pushed_worker,
    token_age_at_worker,
)
from infra.chaos.workload import (
    ForgeryLog,
    SubmitLog,
    forge_callbacks,
    run_schedule,
    submit_via_api,
)
from infra.local import FaultRule, LocalOptions, LocalStack, ReadyInfo
from infra.project_template import parameter_default, project_template
from infra.simulator import Simulator, SimulatorConfig

# What the progress display and the drain need of each item: never the tokens.
PROGRESS_PROJECTION = "task_id, #status, delivered_via, submitted_at"


def poller_concurrency() -> int:
    """The poller's invocations at once as Lambda runs them: the main holder, one successor
    waiting to take over, a helper a group (the template's PollerHelpers) and the schedule's
    next invocation, which gives way at once. The twin needs a worker each: with fewer, the
    schedule's invocations wait behind helpers for a free worker and the poller-not-running
    alarm fires (the soak of 2026-12-04 with one worker less: three times for 10-20 s), which
    on AWS they never do."""
    return int(parameter_default(project_template(), "PollerHelpers")) + 3


@dataclass
class Timeline:
    """What happened when, in seconds since the run started: for the report and its picture."""

    events: list[tuple[float, str]] = field(default_factory=list)

    def note(self, at: float, what: str) -> None:
        self.events.append((round(at, 2), what))


@dataclass
class ChaosResult:
    scenario: Scenario
    verdict: Verdict
    figures: dict[str, Any]
    baseline: dict[str, Any] | None
    submits: dict[str, Any]
    forged: dict[str, Any]
    timeline: Timeline
    arrivals: list[tuple[float, str]]
    started_at: float
    duration_seconds: float
    result_events: dict[str, Any] | None = None
    alarms: AlarmVerdict | None = None
    async_invocations: dict[str, Any] | None = None
    workload: dict[str, Any] = field(default_factory=dict)
    provider_accounts: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        events_passed = bool(self.result_events and self.result_events["passed"])
        alarms_passed = self.alarms is None or self.alarms.passed
        return self.verdict.passed and events_passed and alarms_passed


class ChaosRun:
    def __init__(
        self,
        scenario: Scenario,
        out_dir: Path,
        *,
        with_baseline: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.out_dir = out_dir
        self.with_baseline = with_baseline
        self._progress = progress or _print_progress
        self.timeline = Timeline()
        self._stop = threading.Event()
        self._workload_over = threading.Event()
        self._async: AsyncFaultRun | None = None

    def run(self) -> ChaosResult:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        simulator = Simulator(SimulatorConfig.from_mapping(self.scenario.simulator))
        stack: LocalStack | None = None
        baseline_parts: tuple[Simulator, SeedBaseline] | None = None
        try:
            provider_url = simulator.start()
            stack = LocalStack(self._stack_options(provider_url, simulator.api_keys))
            info = stack.start()
            if self.with_baseline:
                baseline_parts = self._start_baseline()
            return self._drive(simulator, stack, info, baseline_parts)
        finally:
            self._stop.set()
            if self._async is not None:
                self._async.close()
            if baseline_parts:
                baseline_parts[1].stop()
                baseline_parts[0].stop()
            if stack is not None:
                stack.stop()
            simulator.stop()

    def _stack_options(self, provider_url: str, api_keys: list[str]) -> LocalOptions:
        return LocalOptions(
            provider_url=provider_url,
            provider_api_key=api_keys[0],
            provider_account_keys=stack_account_keys(api_keys),
            time_scale=self.scenario.time_scale,
            parameter_overrides=self.scenario.parameter_overrides(),
            workers_per_function=self.scenario.workers_per_function,
            workers_by_function={
                "PollerFunction": poller_concurrency(),
                **self.scenario.workers_by_function,
            },
            run_dir=self.out_dir / "stack",
            # Every worker started before the first fault: the windows are about the faults, not
            # about cold starts on a machine the run loads.
            warm_start=True,
            event_duplicate_rate=EVENT_DUPLICATE_RATE,
        )

    def _start_baseline(self) -> tuple[Simulator, SeedBaseline]:
        # The seed's design has one key and no notion of threads: its plan is left unlimited,
        # so its losses are its own design's, not a plan's refusals.
        uncapped = {**self.scenario.simulator, "threads": 1000, "extra_accounts": []}
        simulator = Simulator(SimulatorConfig.from_mapping(uncapped))
        provider_url = simulator.start()
        baseline = SeedBaseline(
            provider_url,
            simulator.api_key,
            callback_timeout_seconds=self.scenario.callback_timeout_seconds,
            poll_interval_seconds=self.scenario.poll_every_seconds,
            crash_rate=self.scenario.crash_rate,
            seed=self.scenario.seed,
        )
        baseline.start()
        return simulator, baseline

    def _drive(
        self,
        simulator: Simulator,
        stack: LocalStack,
        info: ReadyInfo,
        baseline_parts: tuple[Simulator, SeedBaseline] | None,
    ) -> ChaosResult:
        aws = _AwsView(info)
        if is_clean(self.scenario):
            self._progress("waiting for the stack's first scheduled sweep")
            wait_until_up(stack, settle_seconds(stack.alarms(), self.scenario.time_scale))
        started = time.time() + 1.0
        submits = SubmitLog()
        self._forgeries = ForgeryLog()
        background = [
            threading.Thread(target=self._apply_faults, args=(stack, baseline_parts, started))
        ]
        if self.scenario.attacker:
            background.append(
                threading.Thread(
                    target=forge_callbacks,
                    # The attack lasts as long as the workload: the drain waits for the gateway
                    # to have no request in flight.
                    args=(
                        info.api_url,
                        lambda: [(str(t["id"]), t.get("pingback_url")) for t in simulator.tasks()],
                        self._forgeries,
                        self._workload_over,
                    ),
                )
            )
        alarm_inbox = subscribe_queue_to_alarms(info)
        if self.scenario.async_faults is not None:
            self._async = AsyncFaultRun(self.scenario.async_faults, stack, self.scenario.faults_end)
            self._async.start(started, self._stop)
        injector = self._alarm_injector(stack, simulator)
        if injector is not None:
            background.append(threading.Thread(target=injector.run, args=(started, self._stop)))
        self._waiters = WaitingWorkers(
            info.api_url, info.region, self.scenario.waiting_every, info.websocket_url
        )
        workload = [
            self._schedule(
                submit_via_api(info.api_url, on_accepted=self._waiters.accepted), submits, started
            )
        ]
        if baseline_parts:
            workload.append(
                self._schedule(_baseline_submit(baseline_parts[1]), SubmitLog(), started)
            )
        for thread in background + workload:
            thread.start()
        drained = self._watch(simulator, stack, aws, submits, started, workload)
        self._stop.set()
        self._workload_over.set()
        for thread in background + workload:
            thread.join(timeout=60)
        self._waiters.join(timeout=PATIENCE_SECONDS)
        self.timeline.note(drained.ended_at - started, f"verdict read ({drained.reason})")
        alarm_verdict = self._check_alarms(stack, info, injector, alarm_inbox, started)
        async_report = self._async.finish() if self._async is not None else None
        result = self._conclude(simulator, stack, info, aws, submits, baseline_parts, started)
        result.alarms = alarm_verdict
        result.async_invocations = async_report
        result.workload = _workload_report(self.scenario, submits, drained, started)
        return result

    def _alarm_injector(self, stack: LocalStack, simulator: Simulator) -> AlarmFaultInjector | None:
        faults = self.scenario.alarm_faults
        if faults is None:
            return None
        return AlarmFaultInjector(faults, stack, simulator, self.scenario.retention_seconds)

    def _check_alarms(
        self,
        stack: LocalStack,
        info: ReadyInfo,
        injector: AlarmFaultInjector | None,
        alarm_inbox: str | None,
        started: float,
    ) -> AlarmVerdict:
        """Clean up what the injected faults left once their alarms fired, wait for every alarm
        to clear, and judge the alarm history against the fault windows."""
        self._progress("waiting for the alarms to clear")

        def clean_up_once_reported(report: Any) -> bool:
            fired = {c["logical_id"] for c in report["history"] if c["new_state"] == "ALARM"}
            if injector is None:
                return True
            if {"ParkingQueueDepthAlarm", "TaskExpiredAlarm"} <= fired:
                injector.clean_up(info)
                return True
            return False

        timeout = settle_seconds(stack.alarms(), self.scenario.time_scale)
        settle_alarms(stack, timeout, clean_up_once_reported)
        if injector is not None:
            injector.clean_up(info)
            for at, what in injector.notes:
                self.timeline.note(at, what)
        notifications = count_notifications(info, alarm_inbox) if alarm_inbox else 0
        return judge_alarms(self.scenario, stack.alarms(), started, notifications)

    def _schedule(
        self, submit: Callable[[SubmitLog], None], log: SubmitLog, started: float
    ) -> threading.Thread:
        scenario = self.scenario
        return threading.Thread(
            target=run_schedule,
            args=(scenario.tasks, scenario.submit_seconds, started, submit, log, self._stop),
            kwargs={"threads": scenario.submit_threads},
        )

    def _apply_faults(
        self,
        stack: LocalStack,
        baseline_parts: tuple[Simulator, SeedBaseline] | None,
        started: float,
    ) -> None:
        scenario = self.scenario
        baseline = baseline_parts[1] if baseline_parts else None
        events: list[tuple[float, str, Callable[[], None]]] = [
            (0.0, "crashes, slow stores and late PENDING writes on", lambda: None),
            (scenario.gateway_down.start, "gateway down", lambda: _gateway(stack, baseline, False)),
            (scenario.gateway_down.end, "gateway up", lambda: _gateway(stack, baseline, True)),
            (scenario.table_down.start, "table unavailable", lambda: None),
            (scenario.table_down.end, "table back", lambda: None),
            (scenario.dead_letter_down.start, "DLQ unavailable", lambda: None),
            (scenario.dead_letter_down.end, "DLQ back", lambda: None),
            *(self._async.events() if self._async is not None else []),
        ]
        for at, what, action in sorted(events, key=lambda event: event[0]):
            if self._stop.wait(max(0.0, started + at - time.time())):
                return
            action()
            stack.set_faults(self._rules_active_at(at, started))
            self.timeline.note(time.time() - started, what)

    def _rules_active_at(self, at: float, started: float) -> list[FaultRule]:
        scenario = self.scenario
        until_faults_end = started + scenario.faults_end

        def table_write(
            function: str, mode: str, probability: float, delay: float = 0.0
        ) -> FaultRule:
            return FaultRule(
                mode=mode,
                function=function,
                service="dynamodb",
                operation="UpdateItem",
                probability=probability,
                delay_seconds=delay,
                until=until_faults_end,
            )

        rules = [
            table_write("CallbackFunction", "crash", scenario.crash_rate),
            table_write(
                "CallbackFunction", "delay", scenario.slow_store_rate, scenario.slow_store_seconds
            ),
            table_write(
                "SubmitFunction", "delay", scenario.late_pending_rate, scenario.late_pending_seconds
            ),
        ]
        if at >= scenario.table_down.start:
            rules.insert(
                0,
                FaultRule(
                    mode="unavailable", service="dynamodb", until=started + scenario.table_down.end
                ),
            )
        if at >= scenario.dead_letter_down.start:
            rules.insert(
                0,
                FaultRule(
                    mode="unavailable",
                    function="CallbackFunction",
                    service="sqs",
                    operation="SendMessage",
                    until=started + scenario.dead_letter_down.end,
                ),
            )
        # First: a worker applies the first rule that matches a call, and the table outage's
        # would otherwise take the poller's crash (a sweep that gives up on the table succeeds).
        return (self._async.rules_at(at, started) if self._async else []) + rules

    def _watch(
        self,
        simulator: Simulator,
        stack: LocalStack,
        aws: _AwsView,
        submits: SubmitLog,
        started: float,
        workload: list[threading.Thread],
    ) -> DrainOutcome:
        """Progress until every workload thread has ended and the stack has gone quiet."""
        scenario = self.scenario
        policy = DrainPolicy(
            retention_seconds=scenario.retention_seconds,
            grace_seconds=scenario.drain_grace_seconds,
            not_before=started + scenario.faults_end,
            dead_letter_patience_seconds=scenario.parking_after_seconds,
        )

        def observe() -> Observation:
            items = aws.progress_items()  # before the truth: no id the truth does not know yet
            return Observation(
                simulator.tasks(), items, aws.dead_letter_depth(), stack.requests_in_flight()
            )

        def workload_running() -> bool:
            if any(thread.is_alive() for thread in workload):
                return True
            self._workload_over.set()
            return False

        def show(observation: Observation, _state: object) -> None:
            line = _progress_line(
                time.time() - started,
                scenario,
                submits,
                observation.truth,
                observation.items,
                observation.dead_letters,
            )
            self._progress(line)

        drained = wait_until_quiet(
            observe,
            workload_running,
            policy,
            every_seconds=scenario.progress_every_seconds,
            on_observation=show,
        )
        self.timeline.note(drained.workload_ended_at - started, "last submit ended")
        return drained

    def _conclude(
        self,
        simulator: Simulator,
        stack: LocalStack,
        info: ReadyInfo,
        aws: _AwsView,
        submits: SubmitLog,
        baseline_parts: tuple[Simulator, SeedBaseline] | None,
        started: float,
    ) -> ChaosResult:
        wait_for_result_events(stack)
        items = aws.items()
        truth = simulator.tasks()  # after the table: every id it holds is in the truth
        calls = stack.calls_report()["calls"]
        depths = {"dead_letter": aws.dead_letter_depth(), "parking": aws.parking_depth()}
        emitted = emitted_metrics(Path(info.log_dir))
        arrivals = sorted(
            (float(item["received_at"]) - started, str(item.get("delivered_via", "?")))
            for item in items.values()
            if "received_at" in item and item.get("status") in {"SOLVED", "FAILED"}
        )
        judged = verdict(truth, items, calls, depths)
        judged.forged_accepted = len(forged_decisions(truth, items))
        return ChaosResult(
            scenario=self.scenario,
            verdict=judged,
            figures={
                **figures(truth, items, calls, simulator.stats(), emitted),
                "unanswered_submits": unanswered_submits(truth, items, submits.accepted),
                "throughput": throughput(truth, submits.first_at, submits.last_at),
                "token_age_at_worker": token_age_at_worker(truth, self._waiters.had_at),
                "token_age_at_pushed_worker": token_age_at_pushed_worker(
                    truth,
                    self._waiters.pushed_had_at,
                    self._waiters.pushed_by_get,
                    stack.first_published_writes(),
                ),
                "by_kind": figures_by_kind(
                    truth, judged.lost, judged.wrong_code, self._waiters.had_at
                ),
            },
            baseline=_baseline_report(baseline_parts) if baseline_parts else None,
            submits={
                "answers": dict(submits.answers),
                "with_task_id": dict(submits.with_task_id),
                "errors": dict(submits.errors),
                "sent_again": submits.sent_again,
            },
            forged={
                "answers": dict(self._forgeries.answers),
                "by_kind": {kind: dict(c) for kind, c in self._forgeries.by_kind.items()},
                "accepted": judged.forged_accepted,
                "kept_provisionally": len(forged_provisional(truth, items)),
                "refused_connections": self._forgeries.refused_connections,
            },
            timeline=self.timeline,
            arrivals=arrivals,
            started_at=started,
            duration_seconds=round(time.time() - started, 1),
            result_events=result_events_report(stack, info, items),
            provider_accounts=self._accounts_report(simulator, truth, started),
        )

    def _accounts_report(
        self, simulator: Simulator, truth: list[dict[str, Any]], started: float
    ) -> dict[str, Any]:
        config = simulator.config
        faults = self.scenario.alarm_faults
        return accounts_report(
            truth,
            [config.threads, *(account.threads for account in config.extra_accounts)],
            simulator.stats()["plan"],
            faults.first_account_down if faults else None,
            started,
        )


class _AwsView:
    """The checker's read-only view of the local stack's table and queues."""

    def __init__(self, info: ReadyInfo) -> None:
        self._dynamodb = info.aws_client("dynamodb")
        self._sqs = info.aws_client("sqs")
        self._table = info.tasks_table or ""
        self._dlq = info.dlq_url or ""
        self._parking = info.parking_queue_url or ""

    def items(self) -> dict[str, dict[str, Any]]:
        pages = self._dynamodb.get_paginator("scan").paginate(TableName=self._table)
        return table_items(pages)

    def progress_items(self) -> dict[str, dict[str, Any]]:
        """Status, path and submit time of every item (a cheap Scan: no tokens)."""
        pages = self._dynamodb.get_paginator("scan").paginate(
            TableName=self._table,
            ProjectionExpression=PROGRESS_PROJECTION,
            ExpressionAttributeNames={"#status": "status"},
        )
        return table_items(pages)

    def dead_letter_depth(self) -> int:
        return self._depth(self._dlq)

    def parking_depth(self) -> int:
        return self._depth(self._parking)

    def _depth(self, queue_url: str) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return sum(int(value) for value in attributes.values())


def _workload_report(
    scenario: Scenario, submits: SubmitLog, drained: DrainOutcome, started: float
) -> dict[str, Any]:
    """How long the workload really took against its plan, and how the drain ended."""
    last_submit_ended = submits.last_at or drained.workload_ended_at
    return {
        "planned_submit_seconds": scenario.submit_seconds,
        "submit_seconds": round(last_submit_ended - started, 1),
        "drain_seconds": round(drained.ended_at - last_submit_ended, 1),
        "drain_ended": drained.reason,
        "submits_finished": submits.finished,
        "submits_unanswered": submits.unanswered,
    }


def _gateway(stack: LocalStack, baseline: SeedBaseline | None, up: bool) -> None:
    stack.set_gateway(up)
    if baseline is not None:
        if up:
            baseline.come_back()
        else:
            baseline.go_down()


def _baseline_submit(baseline: SeedBaseline) -> Callable[[SubmitLog], None]:
    def submit(log: SubmitLog) -> None:
        try:
            log.note(200, baseline.submit(SITEKEY, PAGE_URL))
        except Exception as error:
            log.failed(type(error).__name__)

    return submit


def _baseline_report(parts: tuple[Simulator, SeedBaseline]) -> dict[str, Any]:
    simulator, baseline = parts
    truth = simulator.tasks()
    results = baseline.results()
    solved = [t for t in truth if t["outcome"] == "solved"]
    kept = sum(1 for t in solved if results.get(str(t["id"])) == t["code"])
    return {
        "tasks": len(truth),
        "solved_at_provider": len(solved),
        "results_kept": kept,
        "lost": len(solved) - kept,
        "res_php_requests_per_task": round(
            simulator.stats()["res"]["requests"] / max(len(truth), 1), 3
        ),
        "callbacks_answered_500": baseline.counters.callbacks_refused_by_crash,
        "restarts": baseline.counters.restarts,
        # The seed's worker reads its memory: every task, had the moment its result was stored.
        "token_age_at_worker": token_age_at_worker(
            truth, {str(t["id"]): baseline.counters.stored_at.get(str(t["id"])) for t in truth}
        ),
    }


def _progress_line(
    elapsed: float,
    scenario: Scenario,
    submits: SubmitLog,
    truth: Sequence[Mapping[str, Any]],
    items: Mapping[str, Mapping[str, Any]],
    dead_letters: int,
) -> str:
    paths = Counter(
        str(i.get("delivered_via", "")) for i in items.values() if i.get("status") == "SOLVED"
    )
    statuses = Counter(str(i.get("status")) for i in items.values())
    active = [
        name
        for name, window in (
            ("gateway down", scenario.gateway_down),
            ("table down", scenario.table_down),
            ("DLQ down", scenario.dead_letter_down),
        )
        if window.start <= elapsed < window.end
    ]
    return (
        f"[{elapsed:6.1f}s] submitted {len(submits.accepted)}/{scenario.tasks}"
        f" | provider finished {sum(1 for t in truth if t['finished'])}"
        f" | stored: callback {paths['callback']} replay {paths['replay']} poll {paths['poll']}"
        f" failed {statuses['FAILED']} | pending {statuses['PENDING']} | DLQ {dead_letters}"
        f" | {', '.join(active) or 'no outage'}"
    )


def _print_progress(line: str) -> None:
    if sys.stdout.isatty():
        sys.stdout.write("\r\033[K" + line)
    else:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
