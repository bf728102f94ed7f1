"""The chaos run's deadlines follow the run, not its plan: a workload that outlasts its schedule
is waited for, the verdict is read once the stack has gone quiet, and only a task past the
stack's own retention counts as given up. Fast: a fake clock, no stack."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.chaos.checker import unanswered_submits, verdict
from infra.chaos.drain import DrainPolicy, Observation, drain_state, wait_until_quiet

RETENTION = 150.0
GRACE = 30.0
PARKING = 150.0
PLAN = DrainPolicy(
    retention_seconds=RETENTION,
    grace_seconds=GRACE,
    not_before=110.0,
    dead_letter_patience_seconds=PARKING,
)


def _task(task_id: str, submitted_at: float, finished_at: float) -> dict[str, Any]:
    return {
        "id": task_id,
        "submitted_at": submitted_at,
        "finished_at": finished_at,
        "finished": True,
        "outcome": "solved",
        "code": f"token-{task_id}",
        "deliveries": [],
    }


def _solved(task: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "task_id": task["id"],
        "status": "SOLVED",
        "solution": task["code"],
        "submitted_at": task["submitted_at"],
    }


def _pending(task: Mapping[str, Any]) -> dict[str, Any]:
    return {"task_id": task["id"], "status": "PENDING", "submitted_at": task["submitted_at"]}


class SlowRun:
    """A run planned to submit for 60 s whose workload takes 400 s: the last task is submitted
    at 400 s and settles at 520 s, long after the plan's old fixed deadline (60 + 150 + 30)."""

    def __init__(self, *, with_late_task: bool = True) -> None:
        self.now = 0.0
        self.early = _task("1", submitted_at=5.0, finished_at=20.0)
        self.late = _task("2", submitted_at=400.0, finished_at=420.0)
        self.with_late_task = with_late_task

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def workload_running(self) -> bool:
        return self.now < 400.0

    def observe(self) -> Observation:
        late = self.with_late_task and self.now >= 400.0
        truth = [self.early] + ([self.late] if late else [])
        items = {"1": _solved(self.early)}
        if late:
            items["2"] = _solved(self.late) if self.now >= 520.0 else _pending(self.late)
        return Observation(truth, items, dead_letters=0)


def test_a_workload_that_outlasts_its_plan_is_waited_for_and_nothing_is_called_lost() -> None:
    run = SlowRun()

    drained = wait_until_quiet(
        run.observe, run.workload_running, PLAN, every_seconds=10, clock=run.clock, sleep=run.sleep
    )

    assert drained.reason == "quiet"
    assert drained.workload_ended_at == 400.0
    assert drained.ended_at == 520.0
    observation = run.observe()
    judged = verdict(observation.truth, observation.items, calls=[], queue_depths={})
    assert (judged.lost, judged.still_pending, judged.unknown_in_table) == ([], [], [])
    assert judged.passed


def test_the_verdict_is_not_read_while_the_workload_runs_even_if_everything_is_final() -> None:
    run = SlowRun(with_late_task=False)

    drained = wait_until_quiet(
        run.observe, run.workload_running, PLAN, every_seconds=10, clock=run.clock, sleep=run.sleep
    )

    assert drained.ended_at == 400.0


def test_a_pending_task_is_waited_for_until_its_own_retention_and_grace_have_passed() -> None:
    task = _task("7", submitted_at=1000.0, finished_at=1010.0)
    observation = Observation([task], {"7": _pending(task)}, dead_letters=0)

    before = drain_state(observation, 1000.0 + RETENTION + GRACE - 1, PLAN)
    after = drain_state(observation, 1000.0 + RETENTION + GRACE, PLAN)

    assert (before.waiting, before.given_up, before.quiet) == (1, 0, False)
    assert (after.waiting, after.given_up, after.quiet) == (0, 1, True)


def test_a_stack_that_gives_up_ends_the_drain_and_the_verdict_says_still_pending() -> None:
    task = _task("9", submitted_at=0.0, finished_at=10.0)
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    drained = wait_until_quiet(
        lambda: Observation([task], {"9": _pending(task)}, 0),
        lambda: False,
        PLAN,
        every_seconds=5,
        clock=lambda: clock[0],
        sleep=sleep,
    )

    assert drained.ended_at == RETENTION + GRACE
    assert drained.state.given_up == 1
    assert verdict([task], {"9": _pending(task)}, [], {}).still_pending == ["9"]


def test_a_dead_letter_queue_still_draining_holds_the_verdict_back() -> None:
    """A PENDING registration queued while the table was down, replayed late: waited for."""
    task = _task("3", submitted_at=0.0, finished_at=10.0)
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    def observe() -> Observation:
        queued = clock[0] < 300.0
        items = {} if queued else {"3": _solved(task)}
        return Observation([task], items, dead_letters=1 if queued else 0)

    drained = wait_until_quiet(
        observe, lambda: False, PLAN, every_seconds=5, clock=lambda: clock[0], sleep=sleep
    )

    assert drained.reason == "quiet"
    assert drained.ended_at == 300.0


def test_tasks_whose_submit_got_no_answer_are_counted_with_what_the_stack_made_of_them() -> None:
    answered = _task("1", 0.0, 5.0)
    unanswered = _task("2", 0.0, 5.0)
    never_registered = _task("3", 0.0, 5.0)
    table = {"1": _solved(answered), "2": _solved(unanswered)}

    figure = unanswered_submits([answered, unanswered, never_registered], table, ["1"])

    assert figure == {"tasks": 2, "status_in_table": {"SOLVED": 1, "absent": 1}}


def test_pingbacks_the_gateway_still_holds_keep_the_verdict_waiting() -> None:
    """Queued behind busy workers, a pingback can still settle a task past its retention."""
    task = _task("4", submitted_at=0.0, finished_at=10.0)
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    def observe() -> Observation:
        queued = clock[0] < 250.0
        items = {"4": _pending(task) if queued else _solved(task)}
        return Observation([task], items, dead_letters=0, requests_in_flight=3 if queued else 0)

    drained = wait_until_quiet(
        observe, lambda: False, PLAN, every_seconds=5, clock=lambda: clock[0], sleep=sleep
    )

    assert (drained.reason, drained.ended_at) == ("quiet", 250.0)
