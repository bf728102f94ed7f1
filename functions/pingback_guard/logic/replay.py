"""Replay rules: a dead-lettered write is applied like the original, or the message fails again.

Every message passes the edge's rules first (the callback's for results, submit's for
registrations): a message that fails them is refused, and SQS retries then parks it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from enum import StrEnum

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import InvalidCallbackError, InvalidDeadLetterError
from pingback_guard.domain.task import (
    NewTask,
    StoreOutcome,
    SubmissionOutcome,
    TaskResult,
    is_clean_text,
)
from pingback_guard.kinds.registry import InvalidFieldError, parse_provider_fields
from pingback_guard.logic.capability import is_nonce
from pingback_guard.logic.forwarding import is_forwardable_url
from pingback_guard.logic.pingback_request import check_code
from pingback_guard.logic.results import TokenStored, store_result, stored_request
from pingback_guard.queue.dead_letter import DeadLetter, decode_message

# 2020-01-01: nothing this stack wrote can be older. Clock skew allowed into the future: 5 min.
EARLIEST_PLAUSIBLE_TIME = 1_577_836_800.0
MAX_FUTURE_SKEW_SECONDS = 300.0
MAX_FIRST_POLL_DELAY_SECONDS = 86400.0
MAX_MESSAGE_BYTES = 64 * 1024
PRINCIPAL_ARN_PATTERN = re.compile(
    r"arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:[A-Za-z0-9+=,.@_/:-]{1,1024}"
)


class ReplayOutcome(StrEnum):
    """Each outcome is also the name of the metric the handler emits for it."""

    STORED = "ReplayStored"
    DUPLICATE = "ReplayDuplicate"
    CONFLICT = "ReplayConflict"
    REGISTERED = "ReplayRegistered"
    UNREGISTERED = "ReplayUnregistered"
    REJECTED = "ReplayProofMismatch"
    PROVISIONAL_DISCARDED = "ProvisionalResultDiscarded"
    REGISTRATION_REPLACED = "RegistrationReplaced"


class RejectedMessageError(InvalidDeadLetterError):
    """A dead-letter message that breaks the edge's rules: never applied, parked after retries."""


OUTCOME_OF_STORE = {
    StoreOutcome.STORED: ReplayOutcome.STORED,
    StoreOutcome.DUPLICATE: ReplayOutcome.DUPLICATE,
    StoreOutcome.CONFLICT: ReplayOutcome.CONFLICT,
    StoreOutcome.STORED_UNREGISTERED: ReplayOutcome.UNREGISTERED,
    StoreOutcome.REJECTED: ReplayOutcome.REJECTED,
}
OUTCOME_OF_SUBMISSION = {
    SubmissionOutcome.CREATED: ReplayOutcome.REGISTERED,
    SubmissionOutcome.PROVISIONAL_DISCARDED: ReplayOutcome.PROVISIONAL_DISCARDED,
    SubmissionOutcome.RESULT_ALREADY_STORED: ReplayOutcome.DUPLICATE,
    SubmissionOutcome.ALREADY_REGISTERED: ReplayOutcome.DUPLICATE,
    SubmissionOutcome.REGISTRATION_REPLACED: ReplayOutcome.REGISTRATION_REPLACED,
}


class ReplayService:
    def __init__(
        self,
        store: TaskStore,
        clock: Callable[[], float] = time.time,
        on_token_stored: TokenStored | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_token_stored = on_token_stored

    def replay(self, message_body: str) -> ReplayOutcome:
        """Raises on a store failure or a malformed message: SQS retries it, then parks it."""
        write = checked_message(message_body, now=self._clock())
        if isinstance(write, NewTask):
            return OUTCOME_OF_SUBMISSION[self._store.record_submission(write)]
        recorded = store_result(self._store, write)
        outcome = recorded.outcome
        if outcome is StoreOutcome.STORED and not write.is_failure and self._on_token_stored:
            self._on_token_stored(write, stored_request(recorded))
        return OUTCOME_OF_STORE[outcome]


def checked_message(message_body: str, now: float) -> DeadLetter:
    if len(message_body.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
        raise RejectedMessageError("dead-letter message too large")
    try:
        write = decode_message(message_body)
    except InvalidDeadLetterError as error:
        raise RejectedMessageError(str(error)) from None
    if isinstance(write, NewTask):
        _check_registration(write, now)
    else:
        _check_result(write, now)
    return write


def _check_result(result: TaskResult, now: float) -> None:
    try:
        check_code(result.code)
    except InvalidCallbackError as error:
        raise RejectedMessageError(f"dead-letter result: {error}") from None
    _check_time("received_at", result.received_at, now)
    _check_nonce(result.nonce)


def _check_registration(task: NewTask, now: float) -> None:
    try:
        parsed = parse_provider_fields(
            {**task.request.fields, "method": task.request.method}, secrets_sent=False
        )
    except InvalidFieldError as error:
        raise RejectedMessageError(f"dead-letter registration: {error}") from None
    if parsed.without_secrets() != task.request:
        raise RejectedMessageError("dead-letter registration: request is not in canonical form")
    _check_time("submitted_at", task.submitted_at, now)
    first_poll_delay = task.first_poll_at - task.submitted_at
    if not 0 <= first_poll_delay <= MAX_FIRST_POLL_DELAY_SECONDS:
        raise RejectedMessageError("dead-letter registration: first_poll_at out of range")
    _check_nonce(task.nonce)
    if task.owner is not None and not (
        is_clean_text(task.owner) and PRINCIPAL_ARN_PATTERN.fullmatch(task.owner)
    ):
        raise RejectedMessageError("dead-letter registration: owner is not a principal ARN")
    # The forwarder judges loopback itself when it sends; here only the URL's shape.
    if task.forward_url is not None and not is_forwardable_url(
        task.forward_url, allow_loopback=True
    ):
        raise RejectedMessageError("dead-letter registration: forward_url is not allowed")


def _check_time(name: str, moment: float, now: float) -> None:
    if not EARLIEST_PLAUSIBLE_TIME <= moment <= now + MAX_FUTURE_SKEW_SECONDS:
        raise RejectedMessageError(f"dead-letter message: {name} out of range")


def _check_nonce(nonce: str | None) -> None:
    if nonce is not None and not is_nonce(nonce):
        raise RejectedMessageError("dead-letter message: nonce is malformed")
