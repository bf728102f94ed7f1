"""What a worker sees: honest token age bounds, and the read-through a waiting worker triggers."""

from __future__ import annotations

import dataclasses
import math

import pytest

from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderRetryableError,
    SecretUnavailableError,
)
from pingback_guard.domain.task import (
    DeliveryPath,
    NewTask,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.get_task import (
    PollerWatch,
    ReadThroughOutcome,
    ReadThroughPolicy,
    TaskQuery,
)
from pingback_guard.logic.poll_schedule import (
    MIN_SAMPLES,
    RIDING_CHECKS,
    CheckSchedule,
    SolveTimes,
)
from tests.fakes import (
    FakeProvider,
    InMemoryPollerState,
    InMemoryTaskStore,
    token_request,
    unavailable,
)
from tests.waiting import run_at_once

TOKEN = "03AFcWeA5" + "r" * 700
SUBMITTED = 1000.0
EXPECTED_SOLVE = 20.0
FIRST_POLL = SUBMITTED + EXPECTED_SOLVE
# The stack's first check of a reCAPTCHA task: half the expected solve time, never before 15 s.
FIRST_CHECK = SUBMITTED + 15.0
YOUNG_UNTIL = FIRST_CHECK + RIDING_CHECKS * 5
TASK = "71000000001"
WORKER = "arn:aws:iam::123456789012:user/worker"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pending_task(
    store: InMemoryTaskStore,
    method: str = "userrecaptcha",
    task_id: str = TASK,
    submitted_at: float = SUBMITTED,
) -> None:
    request = token_request(method, "sitekey", "https://example.test/")
    store.record_submission(NewTask(task_id, request, submitted_at, submitted_at + EXPECTED_SOLVE))


def policy() -> ReadThroughPolicy:
    return ReadThroughPolicy(CheckSchedule(5, 60), SolveTimes(default_seconds=EXPECTED_SOLVE))


def reading(
    store: InMemoryTaskStore, provider: FakeProvider, now: float
) -> tuple[TaskQuery, Clock]:
    clock = Clock(now)
    return TaskQuery(store, provider, policy(), clock=clock), clock


class TestHonestAge:
    def test_a_late_recovery_is_shown_as_old_as_it_may_be_and_unusable(self) -> None:
        store = InMemoryTaskStore()
        pending_task(store)
        late = TaskResult(TASK, TOKEN, DeliveryPath.POLL, received_at=1150.0, finished_after=1000.0)
        store.record_result(late)
        view = TaskQuery(store).view(TASK, principal=WORKER, now=1151.0)
        assert view is not None
        assert (view["finished_at_earliest"], view["finished_at_latest"]) == (1000.0, 1150.0)
        assert view["token_age_seconds"] == 151.0
        assert view["usable_until"] == 1120.0
        assert view["usable"] is False

    def test_a_fresh_pingback_is_usable_until_its_lifetime_ends(self) -> None:
        store = InMemoryTaskStore()
        pending_task(store, method="turnstile")
        store.record_result(TaskResult(TASK, TOKEN, DeliveryPath.CALLBACK, received_at=1030.0))
        query = TaskQuery(store)
        fresh = query.view(TASK, principal=WORKER, now=1040.0)
        assert fresh is not None and (fresh["usable"], fresh["token_age_seconds"]) == (True, 10.0)
        stale = query.view(TASK, principal=WORKER, now=1330.0)
        assert stale is not None and stale["usable"] is False

    def test_a_token_without_a_known_deadline_is_never_called_usable(self) -> None:
        store = InMemoryTaskStore()
        pending_task(store)
        store.record_result(TaskResult(TASK, TOKEN, DeliveryPath.CALLBACK, received_at=1030.0))
        store.tasks[TASK] = dataclasses.replace(store.tasks[TASK], usable_until=None)
        view = TaskQuery(store).view(TASK, principal=WORKER, now=1031.0)
        assert view is not None and view["usable"] is False

    def test_a_pending_task_has_no_age_and_is_not_usable(self) -> None:
        store = InMemoryTaskStore()
        pending_task(store)
        view = TaskQuery(store).view(TASK, principal=WORKER, now=1001.0)
        assert view is not None
        assert (view["status"], view["token_age_seconds"], view["usable"]) == (
            "PENDING",
            None,
            False,
        )
        assert view["reported"] is None


class TestReadThrough:
    def test_not_overdue_the_provider_is_not_asked(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={TASK: TOKEN})
        pending_task(store)
        query, _ = reading(store, provider, FIRST_CHECK - 1)
        found = query.look(TASK, principal=WORKER, now=FIRST_CHECK - 1)
        assert found is not None and found.read_through is None
        assert provider.requests == []

    def test_overdue_the_token_is_stored_by_read_through_and_returned(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={TASK: TOKEN})
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL + 0.5)
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert found is not None and found.read_through is ReadThroughOutcome.STORED
        assert provider.requests == [[TASK]]
        view = found.view
        assert (view["status"], view["solution"], view["delivered_via"]) == (
            "SOLVED",
            TOKEN,
            "read_through",
        )
        # Never a "not ready" before: the provider may have finished right after the submit.
        assert (view["finished_at_earliest"], view["finished_at_latest"]) == (
            SUBMITTED,
            FIRST_POLL + 0.5,
        )
        assert found.delivery is not None and found.delivery.age_seconds == 20.5
        assert found.delivery.usable is True

    def test_not_ready_is_recorded_and_bounds_the_later_result(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query, clock = reading(store, provider, FIRST_POLL + 0.3)
        first = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert first is not None and first.read_through is ReadThroughOutcome.NOT_READY
        assert first.view["status"] == "PENDING"
        task = store.get(TASK)
        assert task is not None and task.last_checked_at == FIRST_POLL
        provider.answers[TASK] = TOKEN
        clock.now = FIRST_POLL + 8
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL + 8)
        assert found is not None and found.view["finished_at_earliest"] == FIRST_POLL

    def test_within_the_gap_the_provider_is_asked_once(self) -> None:
        # Given a check at 20 s of age, while young the next one is a min gap later: 5 s
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        outcomes = [
            query.look(TASK, principal=WORKER, now=FIRST_POLL + step) for step in (0, 1, 2, 4.9, 5)
        ]
        assert [o.read_through for o in outcomes if o] == [
            ReadThroughOutcome.NOT_READY,
            None,
            None,
            None,
            ReadThroughOutcome.NOT_READY,
        ]
        assert len(provider.requests) == 2

    def test_a_worker_asking_every_second_checks_on_the_pollers_schedule(self) -> None:
        # Given a task that is never solved and a worker asking once a second for two minutes
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query, clock = reading(store, provider, SUBMITTED)
        checked_at: list[float] = []
        for second in range(121):
            clock.now = SUBMITTED + second
            found = query.look(TASK, principal=WORKER, now=clock.now)
            if found is not None and found.read_through is ReadThroughOutcome.NOT_READY:
                checked_at.append(second)
        # Then, no poller sweeping, the checks follow the poller's own schedule: its early first
        # check, every min gap while young, then gaps that grow with the task's age
        young = list(range(15, 76, 5))
        schedule = CheckSchedule(5, 60)
        assert checked_at == [*young, math.ceil(75 + schedule.gap(75))]
        assert len(young) == RIDING_CHECKS + 1

    def test_a_poll_of_the_task_puts_off_the_read_through(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        store.record_not_ready(TASK, FIRST_POLL + 2)  # the poller asked
        query, _ = reading(store, provider, FIRST_POLL + 3)
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL + 3)
        assert found is not None and found.read_through is None
        assert provider.requests == []

    def test_solve_times_learned_from_pingbacks_move_the_first_check(self) -> None:
        # Given enough solved tasks whose pingbacks arrived 40 s after submit, read by workers
        store, provider = InMemoryTaskStore(), FakeProvider()
        query, _ = reading(store, provider, SUBMITTED)
        for index in range(MIN_SAMPLES):
            solved = f"7200000{index:04d}"
            pending_task(store, task_id=solved)
            store.record_result(TaskResult(solved, TOKEN, DeliveryPath.CALLBACK, SUBMITTED + 40))
            query.look(solved, principal=WORKER, now=SUBMITTED + 41)
        # When a new task of the same kind is 30 s old, then 40 s old
        pending_task(store, submitted_at=2000.0)
        early = query.look(TASK, principal=WORKER, now=2030.0)
        due = query.look(TASK, principal=WORKER, now=2040.0)
        # Then it is first checked at the learned time, not the configured 20 s
        assert early is not None and early.read_through is None
        assert due is not None and due.read_through is ReadThroughOutcome.NOT_READY

    def test_a_solved_task_read_again_and_again_is_learned_once(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        query, _ = reading(store, provider, SUBMITTED)
        solved = "72000000001"
        pending_task(store, task_id=solved)
        store.record_result(TaskResult(solved, TOKEN, DeliveryPath.CALLBACK, SUBMITTED + 40))
        for second in range(MIN_SAMPLES * 2):
            query.look(solved, principal=WORKER, now=SUBMITTED + 41 + second)
        pending_task(store, submitted_at=2000.0)
        found = query.look(TASK, principal=WORKER, now=2000.0 + EXPECTED_SOLVE)
        assert found is not None and found.read_through is ReadThroughOutcome.NOT_READY

    def test_a_recent_check_seen_in_the_read_costs_no_write(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        query.look(TASK, principal=WORKER, now=FIRST_POLL)
        claims: list[float] = []
        original_claim = store.claim_read_through

        def counted(task_id: str, now: float, interval_seconds: float) -> bool:
            claims.append(now)
            return original_claim(task_id, now, interval_seconds)

        store.claim_read_through = counted  # type: ignore[method-assign]
        for step in (1, 2, 3, 4):
            query.look(TASK, principal=WORKER, now=FIRST_POLL + step)
        assert claims == []

    def test_many_workers_at_once_one_provider_request(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={TASK: TOKEN})
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)

        def ask() -> str:
            found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
            return found.view["status"] if found else "missing"

        views = run_at_once(8, ask)
        assert provider.requests == [[TASK]]
        assert "SOLVED" in views and set(views) <= {"SOLVED", "PENDING"}

    def test_an_unsolvable_answer_marks_the_task_failed(self) -> None:
        store = InMemoryTaskStore()
        provider = FakeProvider(answers={TASK: "ERROR_CAPTCHA_UNSOLVABLE"})
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert found is not None and found.read_through is ReadThroughOutcome.TASK_FAILED
        assert found.view["status"] == "FAILED" and found.delivery is None

    def test_a_result_stored_meanwhile_wins_and_is_shown(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={TASK: TOKEN + "X"})
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        original_claim = store.claim_read_through

        def pingback_arrives_during_the_check(
            task_id: str, now: float, interval_seconds: float
        ) -> bool:
            claimed = original_claim(task_id, now, interval_seconds)
            store.record_result(TaskResult(TASK, TOKEN, DeliveryPath.CALLBACK, 1019.0))
            return claimed

        store.claim_read_through = pingback_arrives_during_the_check  # type: ignore[method-assign]
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert found is not None and found.read_through is ReadThroughOutcome.ALREADY_STORED
        assert (found.view["solution"], found.view["delivered_via"]) == (TOKEN, "callback")

    @pytest.mark.parametrize(
        ("failure", "outcome"),
        [
            (
                lambda: ProviderAccountError("res.php get: ERROR_ZERO_BALANCE"),
                ReadThroughOutcome.ACCOUNT_ERROR,
            ),
            (
                lambda: ProviderRetryableError("res.php: connection failed"),
                ReadThroughOutcome.ERROR,
            ),
            (
                lambda: SecretUnavailableError("provider API key unavailable"),
                ReadThroughOutcome.ERROR,
            ),
        ],
    )
    def test_provider_trouble_answers_the_pending_view(
        self, failure: object, outcome: ReadThroughOutcome
    ) -> None:
        store = InMemoryTaskStore()
        provider = FakeProvider(failure=failure)  # type: ignore[arg-type]
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert found is not None and found.read_through is outcome
        assert found.view["status"] == "PENDING"

    def test_a_retryable_answer_changes_nothing(self) -> None:
        store, provider = (
            InMemoryTaskStore(),
            FakeProvider(answers={TASK: "ERROR_NO_SLOT_AVAILABLE"}),
        )
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert found is not None and found.read_through is ReadThroughOutcome.NO_ANSWER
        task = store.get(TASK)
        assert task is not None and (task.status, task.last_checked_at) == (
            TaskStatus.PENDING,
            None,
        )

    def test_a_store_error_after_the_read_answers_the_pending_view(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={TASK: TOKEN})
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)

        def table_throttles(task_id: str, now: float, interval_seconds: float) -> bool:
            raise unavailable()

        store.claim_read_through = table_throttles  # type: ignore[method-assign]
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
        assert found is not None and found.read_through is ReadThroughOutcome.ERROR
        assert found.view["status"] == "PENDING"
        assert provider.requests == []

    def test_a_store_error_on_the_first_read_is_the_callers(self) -> None:
        store = InMemoryTaskStore()
        pending_task(store)
        store.fail_next.append(unavailable())
        query, _ = reading(store, FakeProvider(), FIRST_POLL)
        with pytest.raises(Exception, match="ProvisionedThroughput"):
            query.look(TASK, principal=WORKER, now=FIRST_POLL)


def sweeping_poller(store: InMemoryTaskStore, until: float) -> PollerWatch:
    store.acquire_poller_lease("poller-1", SUBMITTED, until)
    return PollerWatch(InMemoryPollerState(store))


class TestWithAPollerSweeping:
    """Issue 33: a GET's read-through checked on its own schedule (the likely solve time, then
    growing gaps) while the poller checked the same young task every 5 s: a task whose pingback
    arrived cost GET workers' tasks 1.2-1.3 res.php requests, and a paced worker, told the
    read-through's sparse times, held what the poller had found for up to 17 s."""

    def test_the_read_through_leaves_a_young_task_to_the_poller(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query = TaskQuery(store, provider, policy(), poller=sweeping_poller(store, 1e9))
        outcomes = [
            query.look(TASK, principal=WORKER, now=FIRST_CHECK + step)
            for step in range(0, int(YOUNG_UNTIL - FIRST_CHECK))
        ]
        assert all(o is not None and o.read_through is None for o in outcomes)
        assert provider.requests == []
        past = query.look(TASK, principal=WORKER, now=YOUNG_UNTIL)
        assert past is not None and past.read_through is ReadThroughOutcome.NOT_READY

    def test_the_hint_follows_the_pollers_young_checks(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query = TaskQuery(store, provider, policy(), poller=sweeping_poller(store, 1e9))
        hints = [
            view["next_check_at"]
            for now in (SUBMITTED + 3, FIRST_CHECK + 0.5, FIRST_CHECK + 7)
            if (view := query.view(TASK, principal=WORKER, now=now)) is not None
        ]
        # A second after each of the poller's checks its result is in the table (a GET sooner
        # than a second after the last learns nothing new).
        assert hints == [FIRST_CHECK + 1, FIRST_CHECK + 1.5, FIRST_CHECK + 11]

    def test_the_hint_names_the_sweep_on_the_pollers_grid(self) -> None:
        """The poller sweeps on a 5 s grid from the epoch: a first check planned at 1017 is
        made in the sweep at 1020, its result in the table a second later, then every 5 s. Told
        1018 (the planned moment and a second), a paced worker looked just before that sweep,
        then 5 s after it."""
        store = InMemoryTaskStore()
        pending_task(store, submitted_at=SUBMITTED + 2)
        gridded = ReadThroughPolicy(
            CheckSchedule(5, 60, sweep_interval_seconds=5),
            SolveTimes(default_seconds=EXPECTED_SOLVE),
        )
        query = TaskQuery(store, FakeProvider(), gridded, poller=sweeping_poller(store, 1e9))
        hints = [
            view["next_check_at"]
            for now in (1005.0, 1017.5, 1020.5, 1021.0, 1024.0)
            if (view := query.view(TASK, principal=WORKER, now=now)) is not None
        ]
        assert hints == [1021.0, 1021.0, 1021.5, 1026.0, 1026.0]

    def test_the_lease_is_read_once_per_few_seconds_and_its_end_means_idle(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        state = InMemoryPollerState(store)
        store.acquire_poller_lease("poller-1", SUBMITTED, FIRST_CHECK + 2)  # its deadline
        query = TaskQuery(store, provider, policy(), poller=PollerWatch(state))
        for second in range(2):
            query.look(TASK, principal=WORKER, now=FIRST_CHECK + second)
        assert state.reads == 1 and provider.requests == []
        found = query.look(TASK, principal=WORKER, now=FIRST_CHECK + 2)
        assert state.reads == 1
        assert found is not None and found.read_through is ReadThroughOutcome.NOT_READY
        query.look(TASK, principal=WORKER, now=FIRST_CHECK + 5)
        assert state.reads == 2

    def test_between_a_busy_pollers_invocations_the_task_is_still_the_pollers(self) -> None:
        """A busy poller's invocation gives its lease back at 55 s and the next takes it at the
        next minute: between the two the read-through made a check of its own per task (0.3
        extra res.php requests a task whose pingback arrived). An idle stack's released lease
        (no work seen) leaves the checks to the read-through at once."""
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        store.acquire_poller_lease("poller-1", SUBMITTED, FIRST_CHECK + 1)
        store.release_poller_lease("poller-1", FIRST_CHECK + 1, {}, busy_at=FIRST_CHECK)
        busy = TaskQuery(store, provider, policy(), poller=PollerWatch(InMemoryPollerState(store)))
        found = busy.look(TASK, principal=WORKER, now=FIRST_CHECK + 5)
        assert found is not None and found.read_through is None
        idle_store = InMemoryTaskStore()
        pending_task(idle_store)
        idle_store.acquire_poller_lease("poller-1", SUBMITTED, FIRST_CHECK + 1)
        idle_store.release_poller_lease("poller-1", FIRST_CHECK + 1, {})
        watch = PollerWatch(InMemoryPollerState(idle_store))
        idle = TaskQuery(idle_store, provider, policy(), poller=watch)
        found = idle.look(TASK, principal=WORKER, now=FIRST_CHECK + 5)
        assert found is not None and found.read_through is ReadThroughOutcome.NOT_READY


class TestPacing:
    """A PENDING answer says when the next GET is worth making (issue 24)."""

    def test_before_the_first_check_the_hint_is_that_check(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={})
        pending_task(store)
        query, _ = reading(store, provider, SUBMITTED + 3)
        view = query.view(TASK, principal=WORKER, now=SUBMITTED + 3)
        assert view is not None
        assert view["next_check_at"] == FIRST_CHECK
        assert view["retry_after"] == 12

    def test_after_a_not_ready_check_the_hint_is_the_schedules_next_gap(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={})
        pending_task(store)
        for age, gap in ((40, 5.0), (YOUNG_UNTIL + 5 - SUBMITTED, CheckSchedule(5, 60).gap(80))):
            checked_at = SUBMITTED + age
            query, _ = reading(store, provider, checked_at)
            found = query.look(TASK, principal=WORKER, now=checked_at)
            assert found is not None and found.read_through is ReadThroughOutcome.NOT_READY
            assert found.view["next_check_at"] == checked_at + gap
            assert found.view["retry_after"] == math.ceil(gap)

    def test_a_worker_asking_sooner_than_the_hint_gets_the_same_correct_answer(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider(answers={})
        pending_task(store)
        query, _ = reading(store, provider, SUBMITTED + 40)
        first = query.look(TASK, principal=WORKER, now=SUBMITTED + 40)
        provider.answers[TASK] = TOKEN
        early = query.look(TASK, principal=WORKER, now=SUBMITTED + 41)
        assert first is not None and early is not None
        assert early.read_through is None and early.view["status"] == "PENDING"
        assert early.view["next_check_at"] == first.view["next_check_at"]
        assert len(provider.requests) == 1

    def test_a_final_answer_carries_no_hint(self) -> None:
        store = InMemoryTaskStore()
        pending_task(store)
        store.record_result(TaskResult(TASK, TOKEN, DeliveryPath.CALLBACK, received_at=1030.0))
        query, _ = reading(store, FakeProvider(answers={}), 1031.0)
        view = query.view(TASK, principal=WORKER, now=1031.0)
        assert view is not None and "retry_after" not in view and "next_check_at" not in view
