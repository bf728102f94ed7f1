"""A pingback's result: stored before the answer, else dead-lettered, else not acknowledged."""

from __future__ import annotations

from enum import StrEnum

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import DeadLetterError, ResultNotSafeError, StoreError
from pingback_guard.domain.task import StoreOutcome, TaskResult
from pingback_guard.logic.results import store_result
from pingback_guard.queue.dead_letter import DeadLetterQueue


class CallbackOutcome(StrEnum):
    """Each outcome is also the name of the metric the handler emits for it."""

    ACCEPTED = "CallbackAccepted"
    TASK_FAILED = "CallbackTaskFailed"
    DUPLICATE = "CallbackDuplicate"
    CONFLICT = "CallbackConflict"
    TO_DEAD_LETTER = "CallbackToDeadLetter"
    UNREGISTERED = "CallbackUnregistered"
    REJECTED = "CallbackProofMismatch"


class CallbackService:
    """Store before answering; on store failure, dead-letter; if both fail, say so."""

    def __init__(self, store: TaskStore, dead_letters: DeadLetterQueue) -> None:
        self._store = store
        self._dead_letters = dead_letters

    def receive(self, result: TaskResult) -> CallbackOutcome:
        try:
            outcome = store_result(self._store, result)
        except StoreError as store_failure:
            self._dead_letter(result, store_failure)
            return CallbackOutcome.TO_DEAD_LETTER
        if outcome is StoreOutcome.DUPLICATE:
            return CallbackOutcome.DUPLICATE
        if outcome is StoreOutcome.CONFLICT:
            return CallbackOutcome.CONFLICT
        if outcome is StoreOutcome.REJECTED:
            return CallbackOutcome.REJECTED
        if outcome is StoreOutcome.STORED_UNREGISTERED:
            return CallbackOutcome.UNREGISTERED
        return CallbackOutcome.TASK_FAILED if result.is_failure else CallbackOutcome.ACCEPTED

    def _dead_letter(self, result: TaskResult, store_failure: StoreError) -> None:
        try:
            self._dead_letters.send(result, reason=str(store_failure))
        except DeadLetterError as queue_failure:
            raise ResultNotSafeError(
                f"table and dead-letter queue both failed: {store_failure}; {queue_failure}"
            ) from None
