"""Fallback polling: batches, backoff, expiry, account errors, budgets and deadlines."""

from __future__ import annotations

import dataclasses
import random

import pytest

from pingback_guard.domain.errors import ProviderAccountError, ProviderRetryableError
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    DueTask,
    NewTask,
    TaskResult,
    TaskStatus,
)
from pingback_guard.logic.poller import PollerService, PollPolicy
from tests.fakes import FakeProvider, InMemoryTaskStore, unavailable

TOKEN = "03AFcWeA5" + "p" * 800
REQUEST = CaptchaRequest("userrecaptcha", "key", "https://example.test")
SUBMITTED = 1000.0
POLICY = PollPolicy(
    retention_seconds=600,
    backoff_base_seconds=30,
    backoff_max_seconds=300,
    max_requests_per_sweep=5,
    ids_per_request=3,
    deadline_margin_seconds=10,
)


def plenty() -> float:
    return 900.0


def pending(store: InMemoryTaskStore, *ids: str, first_poll: float = SUBMITTED + 120) -> None:
    for task_id in ids:
        store.record_submission(NewTask(task_id, REQUEST, SUBMITTED, first_poll))


@pytest.fixture
def store() -> InMemoryTaskStore:
    return InMemoryTaskStore()


def poller(
    store: InMemoryTaskStore, provider: FakeProvider, policy: PollPolicy = POLICY
) -> PollerService:
    return PollerService(store, provider, policy, rng=random.Random(7))


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


def test_not_ready_backs_off_exponentially_with_jitter(store: InMemoryTaskStore) -> None:
    pending(store, "1")
    service = poller(store, FakeProvider(), dataclasses.replace(POLICY, retention_seconds=10_000))
    now = SUBMITTED + 120
    delays = []
    for _ in range(5):
        service.sweep(now=now, remaining_seconds=plenty)
        task = store.get("1")
        assert task is not None and task.due_at is not None
        delays.append(task.due_at - now)
        now = task.due_at
    assert [
        round(d / b, 1) for d, b in zip(delays, [30, 60, 120, 240, 300], strict=True)
    ] == pytest.approx([1.0] * 5, abs=0.21)


def test_backoff_never_passes_the_expiry_moment() -> None:
    task = DueTask("1", due_at=0, submitted_at=SUBMITTED, poll_attempts=10)
    assert POLICY.next_due(task, now=SUBMITTED + 590, rng=random.Random(1)) == SUBMITTED + 600


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
    store.due_tasks = lambda now, limit: due  # type: ignore[method-assign]  # the index lags the table
    report = service.sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert (report.recovered, report.duplicates) == (0, 1)
    task = store.get("1")
    assert task is not None and task.delivered_via is DeliveryPath.CALLBACK


def test_account_error_stops_the_sweep(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 10)])
    provider = FakeProvider(failure=lambda: ProviderAccountError("res.php get: ERROR_ZERO_BALANCE"))
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert report.account_error and "ZERO_BALANCE" in report.account_error
    assert len(provider.requests) == 1


def test_provider_outage_reschedules_and_keeps_going(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 7)])
    provider = FakeProvider(failure=lambda: ProviderRetryableError("res.php: HTTP 503"))
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert (report.requests, report.retryable_errors) == (2, 2)
    assert all((t.due_at or 0) > SUBMITTED + 130 for t in store.tasks.values())


def test_requests_per_sweep_are_bounded(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 40)])
    provider = FakeProvider()
    report = poller(store, provider).sweep(now=SUBMITTED + 130, remaining_seconds=plenty)
    assert len(provider.requests) == POLICY.max_requests_per_sweep
    assert report.due == POLICY.max_requests_per_sweep * POLICY.ids_per_request
    assert all(len(batch) <= POLICY.ids_per_request for batch in provider.requests)


def test_the_sweep_stops_before_the_deadline(store: InMemoryTaskStore) -> None:
    pending(store, *[str(n) for n in range(1, 10)])
    remaining = iter([60.0, 30.0, 5.0, 5.0])
    provider = FakeProvider()
    report = poller(store, provider).sweep(
        now=SUBMITTED + 130, remaining_seconds=lambda: next(remaining)
    )
    assert report.stopped_early and len(provider.requests) == 2


def test_a_store_failure_leaves_the_task_due_for_the_next_sweep(store: InMemoryTaskStore) -> None:
    pending(store, "1")
    provider = FakeProvider(answers={"1": TOKEN})
    service = poller(store, provider)
    due = store.due_tasks(SUBMITTED + 130, 10)
    store.due_tasks = lambda now, limit: due  # type: ignore[method-assign]
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
