"""Fallback polling rules: which tasks to ask about, how often, and when to give up."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderRetryableError,
    StoreError,
)
from pingback_guard.domain.task import DeliveryPath, DueTask, StoreOutcome, TaskResult
from pingback_guard.logic.results import store_result
from pingback_guard.provider.answers import AnswerKind, ProviderAnswer
from pingback_guard.provider.client import ProviderClient

NO_ANSWER = ProviderAnswer(AnswerKind.RETRYABLE, "NO_ANSWER")


@dataclass(frozen=True)
class PollPolicy:
    retention_seconds: float
    backoff_base_seconds: float
    backoff_max_seconds: float
    max_requests_per_sweep: int
    ids_per_request: int
    deadline_margin_seconds: float

    def next_due(self, task: DueTask, now: float, rng: random.Random) -> float:
        """Exponential backoff with jitter, never past the moment the task expires."""
        growth = 2.0 ** min(task.poll_attempts, 30)
        delay = min(self.backoff_max_seconds, self.backoff_base_seconds * growth)
        jittered = delay * rng.uniform(0.8, 1.2)
        return min(now + jittered, self.expires_at(task))

    def expires_at(self, task: DueTask) -> float:
        return task.submitted_at + self.retention_seconds

    def is_expired(self, task: DueTask, now: float) -> bool:
        return now >= self.expires_at(task)

    @property
    def max_tasks_per_sweep(self) -> int:
        return self.max_requests_per_sweep * self.ids_per_request


@dataclass
class SweepReport:
    """What one sweep did; each count is also a metric the handler emits."""

    due: int = 0
    requests: int = 0
    recovered: int = 0
    failed: int = 0
    not_ready: int = 0
    expired: int = 0
    duplicates: int = 0
    conflicts: int = 0
    retryable_errors: int = 0
    store_errors: int = 0
    account_error: str | None = None
    stopped_early: bool = False
    recovery_delays: list[float] = field(default_factory=list)


class PollerService:
    def __init__(
        self,
        store: TaskStore,
        provider: ProviderClient,
        policy: PollPolicy,
        rng: random.Random | None = None,
        on_token_stored: Callable[[TaskResult], None] | None = None,
    ) -> None:
        self._store = store
        self._provider = provider
        self._policy = policy
        self._rng = rng or random.Random()
        self._on_token_stored = on_token_stored

    def sweep(self, now: float, remaining_seconds: Callable[[], float]) -> SweepReport:
        """Poll due PENDING tasks in batches until done, out of budget or out of time."""
        report = SweepReport()
        try:
            due = self._store.due_tasks(now, limit=self._policy.max_tasks_per_sweep)
        except StoreError:
            report.store_errors += 1  # the next sweep finds the same tasks still due
            return report
        report.due = len(due)
        for batch in _chunks(due, self._policy.ids_per_request):
            if remaining_seconds() < self._policy.deadline_margin_seconds:
                report.stopped_early = True
                break
            report.requests += 1
            try:
                answers = self._provider.get_results([task.task_id for task in batch])
            except ProviderAccountError as error:
                report.account_error = str(error)
                break
            except ProviderRetryableError:
                report.retryable_errors += 1
                answers = {}
            for task in batch:
                self._settle(task, answers.get(task.task_id, NO_ANSWER), now, report)
        return report

    def _settle(
        self, task: DueTask, answer: ProviderAnswer, now: float, report: SweepReport
    ) -> None:
        try:
            if answer.is_final:
                self._store_answer(task, answer, now, report)
            elif self._policy.is_expired(task, now):
                report.expired += int(self._store.mark_expired(task.task_id, now))
            else:
                next_due = self._policy.next_due(task, now, self._rng)
                self._store.reschedule_poll(task.task_id, next_due, task.poll_attempts + 1)
                report.not_ready += int(answer.kind is AnswerKind.NOT_READY)
        except StoreError:
            report.store_errors += 1

    def _store_answer(
        self, task: DueTask, answer: ProviderAnswer, now: float, report: SweepReport
    ) -> None:
        result = TaskResult(
            task.task_id,
            answer.value,
            DeliveryPath.POLL,
            received_at=now,
            finished_after=task.submitted_at,
        )
        outcome = store_result(self._store, result)
        if outcome is StoreOutcome.DUPLICATE:
            report.duplicates += 1
        elif outcome is StoreOutcome.CONFLICT:
            report.conflicts += 1
        elif answer.kind is AnswerKind.READY:
            report.recovered += 1
            report.recovery_delays.append(now - task.submitted_at)
            if self._on_token_stored:
                self._on_token_stored(result)
        else:
            report.failed += 1


def _chunks(tasks: Sequence[DueTask], size: int) -> list[Sequence[DueTask]]:
    return [tasks[start : start + size] for start in range(0, len(tasks), size)]
