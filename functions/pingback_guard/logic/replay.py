"""Replay rules: a dead-lettered write is applied like the original, or the message fails again."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import NewTask, StoreOutcome, SubmissionOutcome, TaskResult
from pingback_guard.logic.results import store_result
from pingback_guard.queue.dead_letter import decode_message


class ReplayOutcome(StrEnum):
    """Each outcome is also the name of the metric the handler emits for it."""

    STORED = "ReplayStored"
    DUPLICATE = "ReplayDuplicate"
    CONFLICT = "ReplayConflict"
    REGISTERED = "ReplayRegistered"


OUTCOME_OF_STORE = {
    StoreOutcome.STORED: ReplayOutcome.STORED,
    StoreOutcome.DUPLICATE: ReplayOutcome.DUPLICATE,
    StoreOutcome.CONFLICT: ReplayOutcome.CONFLICT,
}


class ReplayService:
    def __init__(
        self, store: TaskStore, on_token_stored: Callable[[TaskResult], None] | None = None
    ) -> None:
        self._store = store
        self._on_token_stored = on_token_stored

    def replay(self, message_body: str) -> ReplayOutcome:
        """Raises on a store failure or a malformed message: SQS retries it, then parks it."""
        write = decode_message(message_body)
        if isinstance(write, NewTask):
            registered = self._store.record_submission(write)
            if registered is SubmissionOutcome.CREATED:
                return ReplayOutcome.REGISTERED
            return ReplayOutcome.DUPLICATE
        outcome = store_result(self._store, write)
        if outcome is StoreOutcome.STORED and not write.is_failure and self._on_token_stored:
            self._on_token_stored(write)
        return OUTCOME_OF_STORE[outcome]
