"""What a worker sees: honest token age bounds, and the read-through a waiting worker triggers."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderRetryableError,
    SecretUnavailableError,
)
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    NewTask,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.get_task import ReadThroughOutcome, ReadThroughPolicy, TaskQuery
from tests.fakes import FakeProvider, InMemoryTaskStore, unavailable

TOKEN = "03AFcWeA5" + "r" * 700
SUBMITTED = 1000.0
FIRST_POLL = SUBMITTED + 20
TASK = "71000000001"
POLICY = ReadThroughPolicy(interval_seconds=5)
WORKER = "arn:aws:iam::123456789012:user/worker"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pending_task(store: InMemoryTaskStore, method: str = "userrecaptcha") -> None:
    request = CaptchaRequest(method, "sitekey", "https://example.test/")
    store.record_submission(NewTask(TASK, request, SUBMITTED, FIRST_POLL))


def reading(
    store: InMemoryTaskStore, provider: FakeProvider, now: float
) -> tuple[TaskQuery, Clock]:
    clock = Clock(now)
    return TaskQuery(store, provider, POLICY, clock=clock), clock


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
        query, _ = reading(store, provider, FIRST_POLL - 1)
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL - 1)
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
        clock.now = FIRST_POLL + 6
        found = query.look(TASK, principal=WORKER, now=FIRST_POLL + 6)
        assert found is not None and found.view["finished_at_earliest"] == FIRST_POLL

    def test_within_the_interval_the_provider_is_asked_once(self) -> None:
        store, provider = InMemoryTaskStore(), FakeProvider()
        pending_task(store)
        query, _ = reading(store, provider, FIRST_POLL)
        outcomes = [
            query.look(TASK, principal=WORKER, now=FIRST_POLL + step) for step in (0, 1, 2, 4.9, 5)
        ]
        assert [o.read_through for o in outcomes if o] == [
            ReadThroughOutcome.NOT_READY,
            ReadThroughOutcome.SKIPPED,
            ReadThroughOutcome.SKIPPED,
            ReadThroughOutcome.SKIPPED,
            ReadThroughOutcome.NOT_READY,
        ]
        assert len(provider.requests) == 2

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
        barrier = threading.Barrier(8)
        views: list[str] = []

        def ask() -> None:
            barrier.wait()
            found = query.look(TASK, principal=WORKER, now=FIRST_POLL)
            views.append(found.view["status"] if found else "missing")

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
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
