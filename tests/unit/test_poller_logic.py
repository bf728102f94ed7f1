"""Fallback polling: batches, schedule, expiry, account errors, budgets, deadlines, lease."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Collection, Sequence

import pytest

from pingback_guard.domain.errors import ProviderAccountError, ProviderRetryableError
from pingback_guard.domain.lease import PollerLease
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    DueTask,
    NewTask,
    StoreOutcome,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.poll_schedule import (
    KEEP_SWEEPING_AFTER_WORK_SECONDS,
    MAX_CHECKS_PER_TASK,
    RIDING_CHECKS,
    CheckSchedule,
    PollPolicy,
    SolveTimes,
    first_poll_delay,
)
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.sweep_report import SweepReport
from pingback_guard.provider.answers import ProviderAnswer
from tests.fakes import (
    RECAPTCHA_REQUEST,
    UNIT_POLL_POLICY,
    FakeProvider,
    InMemoryTaskStore,
    unavailable,
)

TOKEN = "03AFcWeA5" + "p" * 800
SUBMITTED = 1000.0
# 2captcha blocks keys asking more than this many times about one CAPTCHA.
PROVIDER_MAX_CHECKS = 20
# The template's defaults: 2captcha's 5 s between checks of a task, gaps capped at a minute.
DEFAULT_GAPS_POLICY = dataclasses.replace(
    UNIT_POLL_POLICY, backoff_base_seconds=5, backoff_max_seconds=60
)


def plenty() -> float:
    return 900.0


def pending(store: InMemoryTaskStore, *ids: str, first_poll: float = SUBMITTED + 120) -> None:
    for task_id in ids:
        store.record_submission(NewTask(task_id, RECAPTCHA_REQUEST, SUBMITTED, first_poll))


@pytest.fixture
def store() -> InMemoryTaskStore:
    return InMemoryTaskStore()


def poller(
    store: InMemoryTaskStore, provider: FakeProvider, policy: PollPolicy = UNIT_POLL_POLICY
) -> PollerService:
    return PollerService(store, provider, policy, SolveTimes(default_seconds=20))


def test_given_a_missed_callback_when_swept_then_recovered_via_poll(
    store: InMemoryTaskStore,
) -> None:
    pending(store, "1", "2")
    provider = FakeProvider(answers={"1": TOKEN})
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert (report.due, report.recovered, report.not_ready, report.requests) == (2, 1, 1, 1)
    assert provider.requests == [["1", "2"]] or provider.requests == [["2", "1"]]
    task = store.get("1")
    assert task is not None and (task.status, task.delivered_via, task.solution) == (
        TaskStatus.SOLVED,
        DeliveryPath.POLL,
        TOKEN,
    )
    assert report.recovery_delays == [130.0]


def test_tasks_not_yet_due_are_not_polled(store: InMemoryTaskStore) -> None:
    pending(store, "1")
    provider = FakeProvider()
    report = poller(store, provider).sweep(now=SUBMITTED + 60, remaining_seconds=plenty)
    assert report.due == 0 and provider.requests == []


def test_not_ready_gaps_grow_with_the_task_age_and_checks_stay_few(
    store: InMemoryTaskStore,
) -> None:
    pending(store, "1", first_poll=SUBMITTED + 20)
    service = poller(store, FakeProvider(), DEFAULT_GAPS_POLICY)
    now = SUBMITTED + 20
    checks = []
    while (task := store.get("1")) is not None and task.status is TaskStatus.PENDING:
        service.sweep(now=now, remaining_seconds=plenty)
        checks.append(now - SUBMITTED)
        task = store.get("1")
        assert task is not None
        if task.due_at is None:
            break
        assert task.due_at - now >= 5  # 2captcha: no more often than every 5 s per task
        now = task.due_at
    # Young: every 5 s from the first check for RIDING_CHECKS checks, then growing gaps.
    young = [20 + 5 * n for n in range(RIDING_CHECKS + 1)]
    assert checks[: len(young)] == pytest.approx(young)
    after = checks[len(young) - 1 : len(young) + 2]
    assert after[1] - after[0] == pytest.approx(0.4 * after[0])
    assert after[2] - after[1] == pytest.approx(0.4 * after[1])
    assert len(checks) <= MAX_CHECKS_PER_TASK + 1 <= PROVIDER_MAX_CHECKS
    assert checks[-1] == 600  # one last look at expiry, then EXPIRED


def test_the_first_check_comes_early_half_the_expected_solve_time_until_learned() -> None:
    # Given nothing learned yet, expected solve time 40 s
    solve_times = SolveTimes(default_seconds=40)
    # Then the poller first looks at 20 s
    assert solve_times.first_check("turnstile") == 20
    # and never before 2captcha allows (reCAPTCHA: 15 s, then images: 5 s)
    assert SolveTimes(default_seconds=20).first_check("userrecaptcha") == 15
    assert solve_times.first_check("base64") == 5


def test_once_learned_the_first_check_is_the_tenth_percentile_of_solve_times() -> None:
    # Given 100 learned solve times 11, 12, ... 110 s
    solve_times = SolveTimes(default_seconds=25)
    for seconds in range(11, 111):
        solve_times.observe("turnstile", seconds)
    # Then the first check comes at the 10th of them
    assert solve_times.first_check("turnstile") == 20


def test_a_lost_pingbacks_token_solved_early_is_found_at_the_early_first_check(
    store: InMemoryTaskStore,
) -> None:
    """Given reCAPTCHA expected in 25 s and a task the provider solved 9 s after submit, whose
    pingback never comes, when the poller sweeps every 5 s, then it finds the token at 15 s
    (2captcha's earliest), not at the likely-ready 25 s: 6 s old rather than 16 s."""
    first_check = first_poll_delay("userrecaptcha", 25, callback_timeout_seconds=120)
    pending(store, "1", first_poll=SUBMITTED + first_check)
    provider = FakeProvider()
    service = PollerService(store, provider, DEFAULT_GAPS_POLICY, SolveTimes(default_seconds=25))
    for age in range(0, 30, 5):
        if age >= 9:
            provider.answers["1"] = TOKEN
        service.sweep(now=SUBMITTED + age, remaining_seconds=plenty)
    task = store.get("1")
    assert task is not None and task.received_at == SUBMITTED + 15
    assert provider.requests == [["1"]]


def test_a_not_ready_answer_is_recorded_as_the_last_check(store: InMemoryTaskStore) -> None:
    pending(store, "1", first_poll=SUBMITTED + 20)
    service = poller(store, FakeProvider())
    service.sweep(now=SUBMITTED + 20, remaining_seconds=plenty)
    assert store.tasks["1"].last_checked_at == SUBMITTED + 20
    store.tasks["1"] = dataclasses.replace(store.tasks["1"], due_at=SUBMITTED + 50)
    service = poller(store, FakeProvider(answers={"1": TOKEN}))
    service.sweep(now=SUBMITTED + 50, remaining_seconds=plenty)
    task = store.get("1")
    assert task is not None and task.solution == TOKEN


def test_the_poll_result_says_when_the_provider_can_have_finished() -> None:
    store = InMemoryTaskStore()
    pending(store, "1", first_poll=SUBMITTED + 20)
    recorded: list[TaskResult] = []
    original = store.record_result

    def spy(result: TaskResult) -> object:
        recorded.append(result)
        return original(result)

    store.record_result = spy  # type: ignore[assignment,method-assign]
    poller(store, FakeProvider(), DEFAULT_GAPS_POLICY).sweep(
        now=SUBMITTED + 20, remaining_seconds=plenty
    )
    store.tasks["1"] = dataclasses.replace(store.tasks["1"], due_at=SUBMITTED + 30)
    poller(store, FakeProvider(answers={"1": TOKEN}), DEFAULT_GAPS_POLICY).sweep(
        now=SUBMITTED + 30, remaining_seconds=plenty
    )
    assert [(r.finished_after, r.received_at) for r in recorded] == [
        (SUBMITTED + 20, SUBMITTED + 30)
    ]


def learning_poller(store: InMemoryTaskStore, solve_times: SolveTimes) -> PollerService:
    """A poller whose one task (id 1, due 20 s after submit) is solved."""
    pending(store, "1", first_poll=SUBMITTED + 20)
    return PollerService(store, FakeProvider(answers={"1": TOKEN}), UNIT_POLL_POLICY, solve_times)


def test_without_an_earlier_check_the_result_can_have_finished_since_submit(
    store: InMemoryTaskStore,
) -> None:
    solve_times = SolveTimes(default_seconds=20)
    learning_poller(store, solve_times).sweep(now=SUBMITTED + 20, remaining_seconds=plenty)
    assert list(solve_times.samples["userrecaptcha"]) == [10.0]


def test_a_task_found_ready_long_after_its_last_look_teaches_no_solve_time(
    store: InMemoryTaskStore,
) -> None:
    # Given a backlog: the task's first check comes 200 s after submit
    solve_times = SolveTimes(default_seconds=20)
    service = learning_poller(store, solve_times)

    report = service.sweep(now=SUBMITTED + 200, remaining_seconds=plenty)

    # Then the token is stored, but "solved within 200 s" is not learned as a 100 s solve time
    assert report.recovered == 1
    assert "userrecaptcha" not in solve_times.samples


def test_a_task_not_likely_ready_waits_without_a_request(store: InMemoryTaskStore) -> None:
    pending(store, "1", first_poll=SUBMITTED + 15)
    solve_times = SolveTimes(default_seconds=20)
    for _ in range(30):
        solve_times.observe("userrecaptcha", 40)
    provider = FakeProvider()
    service = PollerService(store, provider, DEFAULT_GAPS_POLICY, solve_times)
    report = service.sweep(now=SUBMITTED + 15, remaining_seconds=plenty)
    task = store.get("1")
    assert (report.deferred, provider.requests) == (1, [])
    assert task is not None and (task.due_at, task.poll_attempts) == (SUBMITTED + 40, 0)
    assert service.sweep(now=SUBMITTED + 40, remaining_seconds=plenty).requests == 1


def test_a_task_a_waiting_worker_just_checked_waits_for_its_next_gap(
    store: InMemoryTaskStore,
) -> None:
    # Given a task due now that a worker's read-through found not ready 2 s ago, at 30 s of age
    pending(store, "1", first_poll=SUBMITTED + 25)
    store.record_not_ready("1", SUBMITTED + 30)
    provider = FakeProvider()
    service = poller(store, provider, DEFAULT_GAPS_POLICY)
    # When the poller sweeps, then once the min gap after that check has passed (the task is
    # young: past its likely-ready time, within its first checks)
    early = service.sweep(now=SUBMITTED + 32, remaining_seconds=plenty)
    task = store.get("1")
    later = service.sweep(now=SUBMITTED + 35, remaining_seconds=plenty)
    # Then it asks res.php only the second time
    assert (early.deferred, early.requests) == (1, 0)
    assert task is not None and task.due_at == SUBMITTED + 35
    assert (later.deferred, later.requests) == (0, 1)


def test_after_the_retention_window_a_not_ready_task_is_expired(store: InMemoryTaskStore) -> None:
    pending(store, "1")
    report = poller(store, FakeProvider()).sweep(now=SUBMITTED + 600, remaining_seconds=plenty)
    assert report.expired == 1
    task = store.get("1")
    assert task is not None and task.status is TaskStatus.EXPIRED


def test_a_ready_answer_at_expiry_time_is_still_recovered(store: InMemoryTaskStore) -> None:
    pending(store, "1")
    report = poller(store, FakeProvider(answers={"1": TOKEN})).sweep(
        now=SUBMITTED + 900, remaining_seconds=plenty
    )
    assert (report.recovered, report.expired) == (1, 0)


@pytest.mark.parametrize("code", ["ERROR_CAPTCHA_UNSOLVABLE", "ERROR_WRONG_CAPTCHA_ID"])
def test_task_errors_mark_the_task_failed(store: InMemoryTaskStore, code: str) -> None:
    pending(store, "1")
    report = poller(store, FakeProvider(answers={"1": code})).sweep(
        now=SUBMITTED + 130, remaining_seconds=plenty
    )
    task = store.get("1")
    assert (
        report.failed == 1
        and task is not None
        and (task.status, task.error) == (TaskStatus.FAILED, code)
    )


def test_callback_racing_the_poller_is_a_duplicate_not_a_second_write(
    store: InMemoryTaskStore,
) -> None:
    pending(store, "1")
    provider = FakeProvider(answers={"1": TOKEN})
    service = poller(store, provider)
    due = store.due_tasks(SUBMITTED + 130, 10)
    store.record_result(TaskResult("1", TOKEN, DeliveryPath.CALLBACK, SUBMITTED + 129))
    store.due_tasks = lambda now, limit, shards=None: due  # type: ignore[method-assign]  # the index lags the table
    report = service.sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert (report.recovered, report.duplicates) == (0, 1)
    task = store.get("1")
    assert task is not None and task.delivered_via is DeliveryPath.CALLBACK


def test_account_error_stops_the_sweep(store: InMemoryTaskStore) -> None:
    # Given more requests due than are asked at once
    pending(store, *[str(n) for n in range(1, 31)])
    provider = FakeProvider(failure=lambda: ProviderAccountError("res.php get: ERROR_ZERO_BALANCE"))
    policy = dataclasses.replace(UNIT_POLL_POLICY, max_requests_per_sweep=10)
    # When the provider says the account cannot pay
    report = poller(store, provider, policy).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    # Then no request is started after that: only those already in flight were asked
    assert report.account_error and "ZERO_BALANCE" in report.account_error
    assert 1 <= len(provider.requests) <= policy.request_workers


def test_requests_are_asked_at_once(store: InMemoryTaskStore) -> None:
    # Given due tasks polled one id per request (image answers may hold '|')
    image = CaptchaRequest("base64", {"body": "aW1hZ2U="})
    for n in range(1, 9):
        store.record_submission(NewTask(str(n), image, SUBMITTED, SUBMITTED + 120))
    asked_together = threading.Barrier(UNIT_POLL_POLICY.request_workers, timeout=5)

    class WaitsForTheOthers(FakeProvider):
        def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
            asked_together.wait()  # broken (the sweep fails) if requests went one at a time
            return super().get_results(task_ids)

    provider = WaitsForTheOthers(answers={str(n): f"answer {n}" for n in range(1, 9)})
    policy = dataclasses.replace(UNIT_POLL_POLICY, max_requests_per_sweep=8)
    # When one sweep asks about them
    report = poller(store, provider, policy).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    # Then the requests were in flight together, and every answer was settled
    assert (report.requests, report.recovered) == (8, 8)
    assert sorted(ids for [ids] in provider.requests) == [str(n) for n in range(1, 9)]


def test_provider_outage_reschedules_and_keeps_going(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 7)])
    provider = FakeProvider(failure=lambda: ProviderRetryableError("res.php: HTTP 503"))
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert (report.requests, report.retryable_errors) == (2, 2)
    assert all((t.due_at or 0) > SUBMITTED + 130 for t in store.tasks.values())
    # no answer is not a "not ready"
    assert all(t.last_checked_at is None for t in store.tasks.values())


def test_requests_per_sweep_are_bounded(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 40)])
    provider = FakeProvider()
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert len(provider.requests) == UNIT_POLL_POLICY.max_requests_per_sweep
    assert report.due == UNIT_POLL_POLICY.max_requests_per_sweep * UNIT_POLL_POLICY.ids_per_request
    assert all(len(batch) <= UNIT_POLL_POLICY.ids_per_request for batch in provider.requests)


# One request in flight at a time: the test knows which request saw which time left.
ONE_AT_A_TIME = dataclasses.replace(UNIT_POLL_POLICY, request_workers=1)


def test_the_sweep_stops_before_the_deadline(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 10)])
    provider = FakeProvider()
    report = poller(store, provider, ONE_AT_A_TIME).sweep(
        now=SUBMITTED + 130,
        remaining_seconds=lambda: [60.0, 30.0, 5.0][min(len(provider.requests), 2)],
    )
    assert report.stopped_early and len(provider.requests) == 2


def test_the_deadline_is_checked_before_each_task_of_an_answered_batch(
    store: InMemoryTaskStore,
) -> None:
    # Given one ids= request answered three tokens, and time runs out after two slow writes
    pending(store, "1", "2", "3")
    provider = FakeProvider(answers={"1": TOKEN, "2": TOKEN, "3": TOKEN})
    remaining = iter([60.0, 60.0, 60.0, 60.0, 5.0])

    report = poller(store, provider).sweep(
        now=SUBMITTED + 130, remaining_seconds=lambda: next(remaining)
    )

    # Then the third is left due for the next sweep, not written past the deadline
    assert report.stopped_early and report.recovered == 2
    task = store.get("3")
    assert task is not None and task.status is TaskStatus.PENDING


def test_a_store_failure_leaves_the_task_due_for_the_next_sweep(store: InMemoryTaskStore) -> None:
    pending(store, "1")
    provider = FakeProvider(answers={"1": TOKEN})
    service = poller(store, provider)
    due = store.due_tasks(SUBMITTED + 130, 10)
    store.due_tasks = lambda now, limit, shards=None: due  # type: ignore[method-assign]
    store.fail_next.append(unavailable())
    report = service.sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert report.store_errors == 1
    task = store.get("1")
    assert task is not None and task.status is TaskStatus.PENDING
    assert service.sweep(now=SUBMITTED + 140, remaining_seconds=plenty).recovered == 1


def test_an_unreadable_due_index_ends_the_sweep_quietly_for_the_next_one(
    store: InMemoryTaskStore,
) -> None:
    pending(store, "1")
    store.fail_next.append(unavailable())
    provider = FakeProvider(answers={"1": TOKEN})
    service = poller(store, provider)
    report = service.sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert (report.store_errors, report.due, provider.requests) == (1, 0, [])
    assert service.sweep(now=SUBMITTED + 140, remaining_seconds=plenty).recovered == 1


def test_an_odd_ids_answer_falls_back_within_the_budget_and_batching_is_probed_later(
    store: InMemoryTaskStore,
) -> None:
    pending(store, *[str(n) for n in range(1, 40)])
    provider = FakeProvider(refuse_batches=1)
    policy = dataclasses.replace(ONE_AT_A_TIME, batch_probe_seconds=60)
    service = poller(store, provider, policy)
    report = service.sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert report.batch_refused == 1
    assert len(provider.requests) == report.requests == UNIT_POLL_POLICY.max_requests_per_sweep
    assert [len(ids) for ids in provider.requests] == [3, 1, 1, 1, 1]
    later = service.sweep(now=SUBMITTED + 150, remaining_seconds=plenty)
    assert all(len(ids) == 1 for ids in provider.requests[-later.requests :])
    probe = service.sweep(now=SUBMITTED + 200, remaining_seconds=plenty)
    assert probe.requests == UNIT_POLL_POLICY.max_requests_per_sweep
    assert all(len(ids) == 3 for ids in provider.requests[-probe.requests :])


def test_the_deadline_is_checked_before_every_single_id_request(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 10)])
    provider = FakeProvider(refuse_batches=1)
    report = poller(store, provider, ONE_AT_A_TIME).sweep(
        now=SUBMITTED + 130,
        remaining_seconds=lambda: [60.0, 60.0, 60.0, 5.0][min(len(provider.requests), 3)],
    )
    assert report.stopped_early and [len(ids) for ids in provider.requests] == [3, 1, 1]


def _clocked(
    store: InMemoryTaskStore,
    provider: FakeProvider,
    policy: PollPolicy,
    meanwhile: Callable[[float], None] = lambda now: None,
) -> tuple[PollerService, list[float]]:
    """A poller on a fake clock; ``meanwhile`` is told each moment a sleep ends at."""
    moments = [SUBMITTED + 20]

    def sleep(seconds: float) -> None:
        moments.append(moments[-1] + seconds)
        meanwhile(moments[-1])

    service = PollerService(
        store,
        provider,
        policy,
        SolveTimes(default_seconds=20),
        clock=lambda: moments[-1],
        sleep=sleep,
    )
    return service, moments


def test_one_invocation_sweeps_every_few_seconds_while_tasks_come_due(
    store: InMemoryTaskStore,
) -> None:
    pending(store, "1", first_poll=SUBMITTED + 20)
    store.record_submission(NewTask("2", RECAPTCHA_REQUEST, SUBMITTED + 10, SUBMITTED + 45))
    provider = FakeProvider()
    policy = dataclasses.replace(
        UNIT_POLL_POLICY, backoff_base_seconds=5, run_seconds=50, sweep_interval_seconds=5
    )
    service, moments = _clocked(store, provider, policy)
    report = service.run(remaining_seconds=lambda: 60 - (moments[-1] - moments[0]))
    assert report.sweeps == 11 and moments[-1] - moments[0] == 50
    assert any("2" in ids for ids in provider.requests)
    assert store.lease["until"] == moments[-1]  # released


def test_a_task_not_due_yet_rides_along_in_a_request_made_for_another(
    store: InMemoryTaskStore,
) -> None:
    """Given A due at +20 and B submitted at +3, first due at +28 but past the provider's
    earliest check (15 s for reCAPTCHA) at +20, the request for A also asks about B."""
    pending(store, "1", first_poll=SUBMITTED + 20)
    store.record_submission(NewTask("2", RECAPTCHA_REQUEST, SUBMITTED + 3, SUBMITTED + 28))
    store.record_submission(NewTask("3", RECAPTCHA_REQUEST, SUBMITTED + 10, SUBMITTED + 35))
    provider = FakeProvider()
    report = poller(store, provider).sweep(now=SUBMITTED + 20, remaining_seconds=plenty)
    assert provider.requests == [["1", "2"]] and report.requests == 1  # 3: too early to ask


def test_riding_never_costs_a_request_of_its_own(store: InMemoryTaskStore) -> None:
    """Given a GeeTest task (one id per request) and a reCAPTCHA one, each past the provider's
    earliest check but not due yet: a request made for a due reCAPTCHA task carries no GeeTest
    rider (it would be a request of its own), and a request made for a due GeeTest task makes no
    ids= request for riders. Before, each sweep asked a young GeeTest task alone."""
    geetest = CaptchaRequest("geetest", {"gt": "g", "challenge": "c", "pageurl": "https://a.test"})
    pending(store, "due-token", first_poll=SUBMITTED + 20)
    store.record_submission(NewTask("young-geetest", geetest, SUBMITTED, SUBMITTED + 30))
    provider = FakeProvider()
    poller(store, provider).sweep(now=SUBMITTED + 20, remaining_seconds=plenty)
    assert provider.requests == [["due-token"]]

    store = InMemoryTaskStore()
    store.record_submission(NewTask("due-geetest", geetest, SUBMITTED, SUBMITTED + 20))
    pending(store, "young-token", first_poll=SUBMITTED + 30)
    provider = FakeProvider()
    poller(store, provider).sweep(now=SUBMITTED + 20, remaining_seconds=plenty)
    assert provider.requests == [["due-geetest"]]


def test_a_task_rides_from_the_earliest_check_a_min_gap_after_its_last_for_its_first_checks(
    store: InMemoryTaskStore,
) -> None:
    schedule = CheckSchedule(5, 60)
    fresh = DueTask("1", SUBMITTED + 25, SUBMITTED, 0, method="userrecaptcha")
    assert schedule.may_ride(fresh, SUBMITTED + 15)  # reCAPTCHA: 15 s after submit
    assert not schedule.may_ride(fresh, SUBMITTED + 14)
    checked = dataclasses.replace(fresh, poll_attempts=1, last_checked_at=SUBMITTED + 20)
    assert schedule.may_ride(checked, SUBMITTED + 25)
    assert not schedule.may_ride(checked, SUBMITTED + 24)
    spent = dataclasses.replace(checked, poll_attempts=RIDING_CHECKS)
    assert not schedule.may_ride(spent, SUBMITTED + 25)


def test_next_checks_not_written_by_the_deadline_leave_their_tasks_due(
    store: InMemoryTaskStore,
) -> None:
    # Given six tasks not ready, and a table that takes 3 s per write near the deadline
    pending(store, *"123456", first_poll=SUBMITTED + 20)
    service, moments = _clocked(
        store, FakeProvider(), dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50)
    )
    write_next_check = store.reschedule_poll

    def slow_write(task_id: str, due_at: float, attempts: int, checked: float | None) -> bool:
        moments.append(moments[-1] + 3.0)
        return write_next_check(task_id, due_at, attempts, checked)

    store.reschedule_poll = slow_write  # type: ignore[method-assign,assignment]

    # When the invocation has 16 s left (deadline margin 10 s)
    report = service.run(remaining_seconds=lambda: 16 - (moments[-1] - moments[0]))

    # Then after its last sweep (11 s left) it writes while more than 5 s are left (two), leaves
    # the other four due as they were, and frees the lease
    assert report.plans_left_due == 4
    unwritten = [t for t in store.due_tasks(SUBMITTED + 130, 10) if t.poll_attempts == 0]
    assert len(unwritten) == 4 and store.lease["until"] == moments[-1]


def test_an_idle_invocation_ends_after_one_sweep(store: InMemoryTaskStore) -> None:
    policy = dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50)
    service, moments = _clocked(store, FakeProvider(), policy)
    report = service.run(remaining_seconds=lambda: 60.0)
    assert report.sweeps == 1 and len(moments) == 1


def _run_with_a_task_submitted_at_40(
    store: InMemoryTaskStore, provider: FakeProvider
) -> tuple[list[float], SweepReport]:
    """An invocation of 50 s from SUBMITTED + 20, sweeping every 5 s; task 2 is submitted at
    SUBMITTED + 40, first due 15 s later."""
    policy = dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50, sweep_interval_seconds=5)

    def submit_at_40(now: float) -> None:
        if now == SUBMITTED + 40:
            store.record_submission(NewTask("2", RECAPTCHA_REQUEST, SUBMITTED + 40, SUBMITTED + 55))

    service, moments = _clocked(store, provider, policy, meanwhile=submit_at_40)
    return moments, service.run(remaining_seconds=lambda: 60 - (moments[-1] - moments[0]))


def _last_work(store: InMemoryTaskStore, busy_at: float) -> None:
    """An earlier invocation that had a task to check at ``busy_at``."""
    store.acquire_poller_lease("earlier", now=busy_at, until=busy_at + 1)
    store.release_poller_lease("earlier", now=busy_at, solve_samples={}, busy_at=busy_at)


def test_an_idle_invocation_sweeps_on_while_the_stack_had_work_within_ten_minutes(
    store: InMemoryTaskStore,
) -> None:
    """Given the stack last had a task to check 9 minutes ago, when an idle invocation runs and
    a task is submitted 20 s into it, then that task is checked when due in this invocation, not
    at the next scheduled one."""
    _last_work(store, SUBMITTED + 20 - (KEEP_SWEEPING_AFTER_WORK_SECONDS - 60))
    provider = FakeProvider(answers={"2": TOKEN})
    moments, report = _run_with_a_task_submitted_at_40(store, provider)
    assert provider.requests == [["2"]] and report.recovered == 1
    # and the lease keeps that this invocation had work (from the sweep at 55 s on)
    assert SUBMITTED + 55 <= float(store.lease["busy_at"]) <= moments[-1]  # type: ignore[arg-type]


def test_long_after_the_last_work_an_idle_invocation_ends_after_one_sweep(
    store: InMemoryTaskStore,
) -> None:
    _last_work(store, SUBMITTED + 20 - KEEP_SWEEPING_AFTER_WORK_SECONDS)
    policy = dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50)
    service, moments = _clocked(store, FakeProvider(), policy)
    report = service.run(remaining_seconds=lambda: 60.0)
    assert report.sweeps == 1 and len(moments) == 1


def test_a_task_submitted_after_the_work_is_done_is_checked_in_the_same_invocation(
    store: InMemoryTaskStore,
) -> None:
    """Given an invocation whose only task is recovered at once, when a task is submitted
    20 s later, then it is checked when it comes due, before the invocation ends."""
    pending(store, "1", first_poll=SUBMITTED + 20)
    provider = FakeProvider(answers={"1": TOKEN, "2": TOKEN})
    _, report = _run_with_a_task_submitted_at_40(store, provider)
    assert provider.requests == [["1"], ["2"]] and report.recovered == 2


def test_a_second_invocation_does_not_sweep_while_the_first_holds_the_lease(
    store: InMemoryTaskStore,
) -> None:
    pending(store, "1")
    store.acquire_poller_lease("other", now=SUBMITTED, until=SUBMITTED + 1000)
    provider = FakeProvider()
    service, _ = _clocked(store, provider, dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50))
    report = service.run(remaining_seconds=lambda: 60.0)
    assert (report.lease_busy, report.sweeps, provider.requests) == (1, 0, [])


def test_a_predecessor_about_to_stop_is_waited_for(store: InMemoryTaskStore) -> None:
    store.acquire_poller_lease("other", now=SUBMITTED, until=SUBMITTED + 23)
    service, moments = _clocked(
        store, FakeProvider(), dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50)
    )
    report = service.run(remaining_seconds=lambda: 60.0)
    assert (report.lease_busy, report.sweeps) == (0, 1) and moments[1] == SUBMITTED + 23


def test_learned_solve_times_survive_in_the_lease(store: InMemoryTaskStore) -> None:
    pending(store, "1", first_poll=SUBMITTED + 20)
    service, _ = _clocked(store, FakeProvider(answers={"1": TOKEN}), UNIT_POLL_POLICY)
    service.run(remaining_seconds=lambda: 60.0)
    assert store.lease["samples"] == {"userrecaptcha": [10.0]}
    fresh_container = SolveTimes(default_seconds=20)
    PollerService(store, FakeProvider(), UNIT_POLL_POLICY, fresh_container).run(lambda: 60.0)
    assert list(fresh_container.samples["userrecaptcha"]) == [10.0]


def test_a_backlog_beyond_one_sweeps_budget_is_worked_off_by_the_next_sweeps(
    store: InMemoryTaskStore,
) -> None:
    pending(store, *[str(n) for n in range(1, 40)], first_poll=SUBMITTED + 20)
    provider = FakeProvider(answers={str(n): TOKEN for n in range(1, 40)})
    policy = dataclasses.replace(UNIT_POLL_POLICY, run_seconds=50)
    service, _ = _clocked(store, provider, policy)
    report = service.run(remaining_seconds=lambda: 60.0)
    assert (report.recovered, report.requests) == (39, 13)
    assert report.sweeps == 11  # having had work, it sweeps on to its end (0..50 s)


def test_within_an_invocation_next_checks_are_written_once_at_its_end() -> None:
    store = InMemoryTaskStore()
    pending(store, "1", "2", "3", first_poll=SUBMITTED + 20)
    provider = FakeProvider()
    policy = dataclasses.replace(UNIT_POLL_POLICY, backoff_base_seconds=5, run_seconds=50)
    service, moments = _clocked(store, provider, policy)

    def pingback_for_2_and_token_for_3(seconds: float) -> None:
        moments.append(moments[-1] + seconds)
        if moments[-1] - SUBMITTED == 30:
            store.record_result(TaskResult("2", TOKEN, DeliveryPath.CALLBACK, moments[-1]))
            provider.answers["3"] = TOKEN

    service._sleep = pingback_for_2_and_token_for_3
    report = service.run(remaining_seconds=lambda: 60.0)
    assert report.not_ready >= 4 and report.recovered == 1
    assert store.rescheduled == ["1"]  # 2 finished by pingback, 3 by poll: nothing to write
    task = store.get("1")
    assert task is not None and task.poll_attempts >= 3 and task.due_at is not None
    assert (task.last_checked_at or 0) >= SUBMITTED + 50  # the latest "not ready", from memory
    recovered = store.get("3")
    assert recovered is not None and recovered.delivered_via is DeliveryPath.POLL


class GatedStore(InMemoryTaskStore):
    """Each result write waits at a barrier of `parties` writers, and counts who is inside."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=5)
        self.inside = 0
        self.most_inside = 0
        self._count_lock = threading.Lock()

    def record_result(self, result: TaskResult) -> StoreOutcome:
        with self._count_lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            self.barrier.wait()
            return super().record_result(result)
        finally:
            with self._count_lock:
                self.inside -= 1


def test_the_answers_of_one_request_are_written_at_once() -> None:
    # Given one ids= request answering three tokens, and writes that only finish together
    store = GatedStore(parties=3)
    pending(store, "1", "2", "3")
    provider = FakeProvider(answers={"1": TOKEN, "2": TOKEN, "3": TOKEN})

    # When the poller sweeps (writing one after another would break the barrier)
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)

    # Then all three are recovered by three writes in flight together
    assert report.recovered == 3 and store.most_inside == 3


def test_no_more_writes_are_in_flight_than_the_policy_allows() -> None:
    # Given six answered tasks and a policy of two writers
    store = GatedStore(parties=2)
    pending(store, *[str(n) for n in range(1, 7)])
    provider = FakeProvider(answers={str(n): TOKEN for n in range(1, 7)})
    policy = dataclasses.replace(UNIT_POLL_POLICY, ids_per_request=6, store_writers=2)

    # When the poller sweeps
    report = poller(store, provider, policy).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)

    # Then every task is written, never more than two at a time
    assert report.recovered == 6 and store.most_inside == 2


def test_kinds_whose_answers_may_hold_a_pipe_are_polled_one_id_per_request(
    store: InMemoryTaskStore,
) -> None:
    """Given GeeTest and image tasks due with reCAPTCHA ones, when swept, then only the
    reCAPTCHA ones share an ids= request and each pipe-capable answer arrives whole."""
    pending(store, "1", "2")
    geetest = CaptchaRequest("geetest", {"gt": "g", "challenge": "c", "pageurl": "https://a.test"})
    image = CaptchaRequest("base64", {"phrase": "1"})
    store.record_submission(NewTask("3", geetest, SUBMITTED, SUBMITTED + 120))
    store.record_submission(NewTask("4", image, SUBMITTED, SUBMITTED + 120))
    seccode = '{"challenge":"c","validate":"v","seccode":"v|jordan"}'
    provider = FakeProvider(answers={"3": seccode, "4": "two words | and a pipe"})
    poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert sorted(provider.requests) == [["1", "2"], ["3"], ["4"]]
    solved = (store.get("3"), store.get("4"))
    assert [task.solution if task else None for task in solved] == [
        seccode,
        "two words | and a pipe",
    ]


def test_batches_refused_while_others_are_in_flight_are_all_asked_again_alone(
    store: InMemoryTaskStore,
) -> None:
    # Given a provider that answers no ids= batch in shape, and several batches asked at once
    pending(store, *[str(n) for n in range(1, 10)])
    provider = FakeProvider(answers={str(n): f"answer {n}" for n in range(1, 10)}, refuse_batches=9)
    policy = dataclasses.replace(UNIT_POLL_POLICY, max_requests_per_sweep=20)
    # When one sweep asks about them
    report = poller(store, provider, policy).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    # Then every task was asked again alone and recovered, none lost to the refusals
    alone = sorted(ids[0] for ids in provider.requests if len(ids) == 1)
    assert alone == sorted(str(n) for n in range(1, 10))
    assert report.recovered == 9 and report.batch_refused >= 1


class ShardedOrderStore(InMemoryTaskStore):
    """Due tasks in the order a sharded index gives them: not the most overdue first."""

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        return list(reversed(super().due_tasks(now, limit, shards)))


def test_a_sweep_out_of_budget_asks_for_the_most_overdue_tasks_first_whatever_their_kind() -> None:
    """Given image tasks (one id per request) long overdue behind newer reCAPTCHA and image
    checks, in the index's order; when a sweep can make two requests; then it asks for the two
    oldest images, not the batch and the young image the index listed first."""
    store = ShardedOrderStore()
    image = CaptchaRequest("base64", {"phrase": "1"})
    store.record_submission(NewTask("old-1", image, SUBMITTED, SUBMITTED + 8))
    store.record_submission(NewTask("old-2", image, SUBMITTED, SUBMITTED + 9))
    store.record_submission(NewTask("young", image, SUBMITTED + 100, SUBMITTED + 125))
    pending(store, "token-1", "token-2")
    policy = dataclasses.replace(UNIT_POLL_POLICY, max_requests_per_sweep=2)
    provider = FakeProvider()

    report = poller(store, provider, policy).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)

    assert sorted(provider.requests) == [["old-1"], ["old-2"]] and report.budget_exhausted == 1


class SlowStore(InMemoryTaskStore):
    """A table that answers every request the poller makes after ``seconds`` on the fake clock
    (the soak's moto under load), recording when each call ended."""

    def __init__(self, moments: list[float], seconds: float) -> None:
        super().__init__()
        self.moments, self.seconds, self.ended = moments, seconds, list[float]()

    def _slow(self) -> None:
        self.moments.append(self.moments[-1] + self.seconds)
        self.ended.append(self.moments[-1])

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        self._slow()
        return super().due_tasks(now, limit, shards)

    def next_due_at(
        self, after: float, until: float, shards: Collection[int] | None = None
    ) -> float | None:
        self._slow()
        return super().next_due_at(after, until, shards)

    def reschedule_poll(
        self, task_id: str, due_at: float, poll_attempts: int, last_checked_at: float | None = None
    ) -> bool:
        self._slow()
        return super().reschedule_poll(task_id, due_at, poll_attempts, last_checked_at)

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        self._slow()
        return super().acquire_poller_lease(holder, now, until)

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        self._slow()
        super().release_poller_lease(holder, now, solve_samples, busy_at)


def test_a_slow_table_never_runs_the_invocation_past_its_deadline() -> None:
    """Given a table taking 13 s, its client's whole bound, on every request, when an invocation
    of 70 s sweeps tasks that stay not ready, then every call, the last next-check writes and
    the lease's release included, ends before the Lambda deadline, and the lease is released."""
    request_seconds = 13.0
    moments = [SUBMITTED + 20]
    store = SlowStore(moments, request_seconds)
    pending(store, *[str(n) for n in range(1, 7)], first_poll=SUBMITTED + 20)
    policy = dataclasses.replace(
        UNIT_POLL_POLICY,
        run_seconds=55,
        backoff_base_seconds=5,
        store_call_seconds=request_seconds,
        deadline_margin_seconds=max(10.0, 2 * request_seconds),
    )
    service = PollerService(
        store,
        FakeProvider(),
        policy,
        SolveTimes(default_seconds=20),
        clock=lambda: moments[-1],
        sleep=lambda seconds: moments.append(moments[-1] + seconds),
    )
    deadline = moments[0] + 70

    service.run(remaining_seconds=lambda: deadline - moments[-1])

    assert max(store.ended) <= deadline
    released_at = store.lease["until"]
    assert isinstance(released_at, float) and released_at < deadline  # not left to expire
