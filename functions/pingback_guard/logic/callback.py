"""A pingback's result: stored before the answer, else dead-lettered, else not acknowledged."""

from __future__ import annotations

from enum import StrEnum

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import DeadLetterError, ResultNotSafeError, StoreError
from pingback_guard.domain.task import StoreOutcome, TaskResult
from pingback_guard.logic.results import TokenStored, store_result, stored_request
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


OUTCOME_OF_REFUSAL = {
    StoreOutcome.DUPLICATE: CallbackOutcome.DUPLICATE,
    StoreOutcome.CONFLICT: CallbackOutcome.CONFLICT,
    StoreOutcome.REJECTED: CallbackOutcome.REJECTED,
    StoreOutcome.STORED_UNREGISTERED: CallbackOutcome.UNREGISTERED,
}


class CallbackService:
    """Store before answering; on store failure, dead-letter; if both fail, say so."""

    def __init__(
        self,
        store: TaskStore,
        dead_letters: DeadLetterQueue,
        on_token_stored: TokenStored | None = None,
    ) -> None:
        self._store = store
        self._dead_letters = dead_letters
        self._on_token_stored = on_token_stored

    def receive(self, result: TaskResult) -> CallbackOutcome:
        try:
            recorded = store_result(self._store, result)
        except StoreError as store_failure:
            self._dead_letter(result, store_failure)
            return CallbackOutcome.TO_DEAD_LETTER
        outcome = recorded.outcome
        if outcome is not StoreOutcome.STORED:
            return OUTCOME_OF_REFUSAL[outcome]
        if result.is_failure:
            return CallbackOutcome.TASK_FAILED
        if self._on_token_stored:
            self._on_token_stored(result, stored_request(recorded))
        return CallbackOutcome.ACCEPTED

    def _dead_letter(self, result: TaskResult, store_failure: StoreError) -> None:
        try:
            self._dead_letters.send(result, reason=str(store_failure))
        except DeadLetterError as queue_failure:
            raise ResultNotSafeError(
                f"table and dead-letter queue both failed: {store_failure}; {queue_failure}"
            ) from None
