"""What a sweep settles for good, written: each result or expiry one conditional write, up to
``store_writers`` at once (on a slow table a sweep writing them in a row ran out of time), each
started only with time left, and each outcome counted into the sweep's report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import StoreError
from pingback_guard.domain.task import (
    DeliveryPath,
    DueTask,
    RecordedSolution,
    StoreOutcome,
    TaskResult,
)
from pingback_guard.logic.results import TokenStored, store_result, stored_request
from pingback_guard.logic.sweep_report import SweepReport
from pingback_guard.provider.answers import AnswerKind, ProviderAnswer


@dataclass(frozen=True)
class FinalWrite:
    """A task this sweep settles for good: its result, or None when it expires unrecovered."""

    task: DueTask
    answer: ProviderAnswer
    result: TaskResult | None


def final_write(task: DueTask, answer: ProviderAnswer, now: float) -> FinalWrite:
    """``answer`` final: the task's result; else (the task expired) none."""
    if not answer.is_final:
        return FinalWrite(task, answer, None)
    result = TaskResult(
        task.task_id,
        answer.value,
        DeliveryPath.POLL,
        received_at=now,
        finished_after=task.last_checked_at or task.submitted_at,
        user_agent=answer.user_agent,
    )
    return FinalWrite(task, answer, result)


class FinalWrites:
    def __init__(
        self, store: TaskStore, store_writers: int, on_token_stored: TokenStored | None
    ) -> None:
        self._store = store
        self._store_writers = store_writers
        self._on_token_stored = on_token_stored
        self._writers = ThreadPoolExecutor(store_writers, thread_name_prefix="poll-store")

    def write(
        self,
        final: Sequence[FinalWrite],
        now: float,
        may_start: Callable[[], bool],
        report: SweepReport,
    ) -> bool:
        """Write them all, each only if ``may_start``; False: out of time, the tasks not
        written stay due."""
        written: list[tuple[FinalWrite, Future[RecordedSolution | bool]]] = []
        in_flight: set[Future[RecordedSolution | bool]] = set()
        in_time = True
        for write in final:
            if len(in_flight) >= self._store_writers:
                _, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            if not may_start():
                in_time = False
                break
            future = self._writers.submit(self._write, write, now)
            in_flight.add(future)
            written.append((write, future))
        wait(in_flight)
        for write, outcome in written:
            self._count(write, outcome, now, report)
        return in_time

    def _write(self, write: FinalWrite, now: float) -> RecordedSolution | bool:
        if write.result is None:
            return self._store.mark_expired(write.task.task_id, now)
        return store_result(self._store, write.result)

    def _count(
        self,
        write: FinalWrite,
        outcome: Future[RecordedSolution | bool],
        now: float,
        report: SweepReport,
    ) -> None:
        try:
            written = outcome.result()
        except StoreError:
            report.store_errors += 1  # the task stays due: it is checked again sooner
            return
        if write.result is None or isinstance(written, bool):
            report.expired += int(written is True)
            return
        stored = written.outcome
        if stored is StoreOutcome.DUPLICATE:
            report.duplicates += 1
        elif stored is StoreOutcome.CONFLICT:
            report.conflicts += 1
        elif write.answer.kind is AnswerKind.READY:
            report.recovered += 1
            report.recovery_delays.append(now - write.task.submitted_at)
            if self._on_token_stored:
                self._on_token_stored(write.result, stored_request(written))
        else:
            report.failed += 1
