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
from pingback_guard.kinds.fields import MAX_URL_BYTES
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.logic.submit import PendingTasks

CALLBACK_PATH_PREFIX = "/callback/"
NOT_ISSUED = "pingback_url must be a URL issued by POST /pingback-urls"


class InvalidRegistrationError(ValueError):
    """A registration's task id or pingback URL that cannot be recorded; the message is a reason
    that never echoes input. A bad CAPTCHA field is an InvalidFieldError."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


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
    """InvalidRegistrationError for the task id or pingback URL, InvalidFieldError for the rest.

    The worker submitted the task itself: its secrets (proxy, cookies, images) are not needed and
    never kept."""
    try:
        task_id = normalise_task_id(raw_task_id)
    except ValueError:
        raise InvalidRegistrationError("task_id", "task_id must be 1 to 20 digits") from None
    if not isinstance(document, Mapping):
        raise InvalidRegistrationError("body", "body must be a JSON object")
    capability = _capability_of(document.get("pingback_url"))
    described = {name: value for name, value in document.items() if name != "pingback_url"}
    request = request_from_json(described, secrets_sent=False).without_secrets()
    return RegistrationRequest(task_id, request, capability)


def _capability_of(url: object) -> str:
    """The last path segment of ``.../callback/<capability>``; the caller checks its MAC."""
    if not is_clean_text(url) or len(str(url)) > MAX_URL_BYTES:
        raise InvalidRegistrationError("pingback_url", NOT_ISSUED)
    parts = urlsplit(str(url))
    _, found, capability = parts.path.rpartition(CALLBACK_PATH_PREFIX)
    if parts.scheme not in {"http", "https"} or not parts.netloc or not found or "/" in capability:
        raise InvalidRegistrationError("pingback_url", NOT_ISSUED)
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
