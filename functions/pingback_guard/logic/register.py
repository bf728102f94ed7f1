"""Tasks a worker submitted to the provider itself, with a pingback URL this stack issued.

A pingback URL is issued to one principal and registers one task id, once, within the
registration window (one retention window) of its issue. Registering records the task as submit
does (PENDING, nonce, owner, first poll when likely ready), so the three nets protect it too,
but as a claim: this stack's own submit of the same id replaces it, and two registrations of
one id are both claims until the pingback that carries one of their capabilities decides.
Repeating a registration is harmless.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import ProviderRetryableError
from pingback_guard.domain.task import (
    CaptchaRequest,
    IssuedPingbackUrl,
    NewTask,
    PingbackUrlClaim,
    RegistrationOutcome,
    TaskOrigin,
    is_clean_text,
    normalise_task_id,
)
from pingback_guard.kinds.fields import MAX_URL_BYTES
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.logic.capability import ProvenCapability
from pingback_guard.logic.submit import PendingTasks, issue_pingback
from pingback_guard.provider.answers import AnswerKind
from pingback_guard.provider.client import ProviderClient

# res.php's answers for an id the provider does not know (for this stack's API key).
UNKNOWN_ID_CODES = frozenset({"ERROR_WRONG_CAPTCHA_ID", "ERROR_WRONG_ID_FORMAT"})
# Answered alike: a registration that loses to, or contests, another's task.
CLAIMS = frozenset({RegistrationOutcome.CONTESTED, RegistrationOutcome.HELD_ELSEWHERE})

CALLBACK_PATH_PREFIX = "/callback/"
NOT_ISSUED = "pingback_url must be a URL issued by POST /pingback-urls"


class InvalidRegistrationError(ValueError):
    """A registration's task id or pingback URL that cannot be recorded; the message is a reason
    that never echoes input. A bad CAPTCHA field is an InvalidFieldError."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


class PingbackUrlRefusedError(InvalidRegistrationError):
    """The URL was issued to another principal, registered another id, or its window ended."""

    def __init__(self) -> None:
        super().__init__(
            "pingback_url",
            "pingback_url was not issued to this caller, registered another task,"
            " or its registration window ended",
        )


class UnknownAtProviderError(InvalidRegistrationError):
    """The provider does not know the id (for this stack's API key): nothing to register."""

    def __init__(self) -> None:
        super().__init__("task_id", "the provider does not know this task id")


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


@dataclass(frozen=True)
class HandedOutUrl:
    url: str
    register_by: float


@dataclass(frozen=True)
class RegistrationWindow:
    """How long after its issue a pingback URL may register a task (one retention window); its
    record lives as long as the capability counts (two)."""

    seconds: float

    def issued(self, nonce: str, owner: str, now: float) -> IssuedPingbackUrl:
        return IssuedPingbackUrl(nonce, owner, now, now + self.seconds, now + 2 * self.seconds)


class RegisterService:
    def __init__(
        self,
        store: TaskStore,
        pending: PendingTasks,
        provider: ProviderClient,
        window: RegistrationWindow,
        *,
        clock: Callable[[], float] = time.time,
        on_provisional_discarded: Callable[[NewTask], None] = lambda _task: None,
        on_claim_clash: Callable[[NewTask, RegistrationOutcome], None] = lambda _t, _o: None,
    ) -> None:
        self._store = store
        self.pending = pending
        self._provider = provider
        self._window = window
        self._clock = clock
        self._on_provisional_discarded = on_provisional_discarded
        self._on_claim_clash = on_claim_clash

    def issue(self, public_base_url: str, secret: str, owner: str) -> HandedOutUrl:
        """A pingback URL for ``owner``, recorded before it is handed out."""
        now = self._clock()
        pingback = issue_pingback(public_base_url, secret, now)
        issued = self._window.issued(pingback.nonce, owner, now)
        self._store.record_pingback_url(issued)
        return HandedOutUrl(pingback.url, issued.register_by)

    def register(
        self, registration: RegistrationRequest, proof: ProvenCapability, owner: str
    ) -> RegistrationOutcome:
        """Raises PingbackUrlRefusedError or UnknownAtProviderError (the caller's 400 / 404),
        StoreError or a provider error when an answer is missing: the worker retries."""
        claim = self._store.claim_pingback_url(
            proof.nonce, owner, registration.task_id, self._clock()
        )
        if claim is not PingbackUrlClaim.CLAIMED:
            raise PingbackUrlRefusedError
        self._check_known_to_provider(registration.task_id)
        task = self.pending.new(
            registration.task_id,
            registration.request,
            proof.nonce,
            owner,
            origin=TaskOrigin.REGISTER,
        )
        outcome = self._store.record_registration(task)
        if outcome is RegistrationOutcome.PROVISIONAL_DISCARDED:
            self._on_provisional_discarded(task)
        if outcome in CLAIMS:
            self._on_claim_clash(task, outcome)
        return outcome

    def _check_known_to_provider(self, task_id: str) -> None:
        """An id the provider has not handed out yet cannot be registered: a future id is
        where another worker's submit would land."""
        answer = self._provider.get_results([task_id]).get(task_id)
        if answer is None or answer.kind is AnswerKind.RETRYABLE:
            raise ProviderRetryableError("res.php get: no answer for the registered id")
        if answer.kind is AnswerKind.TASK_PERMANENT and answer.value in UNKNOWN_ID_CODES:
            raise UnknownAtProviderError
