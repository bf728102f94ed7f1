"""Tasks a worker submitted to the provider itself, with a pingback URL this stack issued.

Registering records the task exactly as submit does (PENDING, nonce, owner, first poll after the
callback timeout), so the three nets protect it too. Registration is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import (
    CaptchaRequest,
    NewTask,
    SubmissionOutcome,
    is_clean_text,
    normalise_task_id,
)
from pingback_guard.logic.submit import (
    MAX_PAGE_URL_LENGTH,
    InvalidSubmissionError,
    PendingTasks,
    parse_submission,
)

REGISTRATION_FIELDS = frozenset({"pingback_url", "method", "sitekey", "page_url", "extras"})
CALLBACK_PATH_PREFIX = "/callback/"


class InvalidRegistrationError(ValueError):
    """A registration that cannot be recorded; the message is a reason that never echoes input."""


class RegistrationOutcome(StrEnum):
    CREATED = "created"
    SAME_AGAIN = "same_again"
    DIFFERENT_DATA = "different_data"


@dataclass(frozen=True)
class RegistrationRequest:
    task_id: str
    request: CaptchaRequest
    capability: str


def parse_registration(raw_task_id: object, document: object) -> RegistrationRequest:
    try:
        task_id = normalise_task_id(raw_task_id)
    except ValueError:
        raise InvalidRegistrationError("task_id must be 1 to 20 digits") from None
    if not isinstance(document, Mapping):
        raise InvalidRegistrationError("body must be a JSON object")
    unknown = set(document) - REGISTRATION_FIELDS
    if unknown:
        raise InvalidRegistrationError(f"unknown fields: {len(unknown)}")
    try:
        request = parse_submission({k: v for k, v in document.items() if k != "pingback_url"})
    except InvalidSubmissionError as error:
        raise InvalidRegistrationError(str(error)) from None
    return RegistrationRequest(task_id, request, _capability_of(document.get("pingback_url")))


def _capability_of(url: object) -> str:
    """The last path segment of ``.../callback/<capability>``; the caller checks its MAC."""
    if not is_clean_text(url) or len(str(url)) > MAX_PAGE_URL_LENGTH:
        raise InvalidRegistrationError("pingback_url must be a URL issued by POST /pingback-urls")
    parts = urlsplit(str(url))
    _, found, capability = parts.path.rpartition(CALLBACK_PATH_PREFIX)
    if parts.scheme not in {"http", "https"} or not parts.netloc or not found or "/" in capability:
        raise InvalidRegistrationError("pingback_url must be a URL issued by POST /pingback-urls")
    return capability


class RegisterService:
    def __init__(
        self,
        store: TaskStore,
        pending: PendingTasks,
        *,
        on_provisional_discarded: Callable[[NewTask], None] = lambda _task: None,
    ) -> None:
        self._store = store
        self.pending = pending
        self._on_provisional_discarded = on_provisional_discarded

    def register(
        self, registration: RegistrationRequest, nonce: str, owner: str
    ) -> RegistrationOutcome:
        """Raises StoreError when the table cannot answer: the worker retries (idempotent)."""
        task = self.pending.new(registration.task_id, registration.request, nonce, owner)
        outcome = self._store.record_submission(task)
        if outcome is SubmissionOutcome.PROVISIONAL_DISCARDED:
            self._on_provisional_discarded(task)
        if outcome is not SubmissionOutcome.ALREADY_REGISTERED:
            return RegistrationOutcome.CREATED
        existing = self._store.get(registration.task_id)
        same = existing is not None and (existing.request, existing.nonce, existing.owner) == (
            task.request,
            nonce,
            owner,
        )
        return RegistrationOutcome.SAME_AGAIN if same else RegistrationOutcome.DIFFERENT_DATA
