"""Callback rules: who may call, what a valid pingback is, and store-or-dead-letter."""

from __future__ import annotations

import hmac
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qs

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import (
    DeadLetterError,
    InvalidCallbackError,
    ResultNotSafeError,
    StoreError,
)
from pingback_guard.domain.task import (
    MAX_CODE_LENGTH,
    DeliveryPath,
    StoreOutcome,
    TaskResult,
    is_error_code,
    normalise_task_id,
)
from pingback_guard.logic import capability
from pingback_guard.logic.results import store_result
from pingback_guard.provider.answers import is_known_task_error, is_plausible_token
from pingback_guard.queue.dead_letter import DeadLetterQueue

MAX_CALLBACK_BODY_BYTES = 16 * 1024
MAX_SECRET_LENGTH = 128
SECRET_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
JSON_CONTENT_TYPE = "application/json"


class CallbackOutcome(StrEnum):
    """Each outcome is also the name of the metric the handler emits for it."""

    ACCEPTED = "CallbackAccepted"
    TASK_FAILED = "CallbackTaskFailed"
    DUPLICATE = "CallbackDuplicate"
    CONFLICT = "CallbackConflict"
    TO_DEAD_LETTER = "CallbackToDeadLetter"
    UNREGISTERED = "CallbackUnregistered"
    REJECTED = "CallbackProofMismatch"


@dataclass(frozen=True)
class PingbackProof:
    """What the path proved: a capability's nonce, or (nonce None) the pre-upgrade whole secret.

    The whole secret only decides tasks recorded without a nonce (in flight at the upgrade).
    """

    nonce: str | None


@dataclass(frozen=True)
class CallbackRequest:
    """The parts of an HTTP request a pingback can use."""

    method: str
    query: Mapping[str, str]
    content_type: str
    body: bytes


@dataclass(frozen=True)
class CallbackSecrets:
    current: str
    previous: str = ""

    @classmethod
    def from_document(cls, document: object) -> CallbackSecrets:
        if not isinstance(document, Mapping):
            raise ValueError("callback secret must be a JSON object")
        current = str(document.get("current", ""))
        previous = str(document.get("previous", "") or "")
        if not SECRET_PATTERN.fullmatch(current):
            raise ValueError("callback secret 'current' must be 16-128 URL-safe characters")
        if previous and not SECRET_PATTERN.fullmatch(previous):
            raise ValueError("callback secret 'previous' must be 16-128 URL-safe characters")
        return cls(current=current, previous=previous)

    def accepts(self, presented: str) -> bool:
        """Constant-time compare against both secrets, so rotation loses no pingback."""
        if not SECRET_PATTERN.fullmatch(presented):
            return False
        candidate = presented.encode()
        matches = [hmac.compare_digest(candidate, self.current.encode())]
        if self.previous:
            matches.append(hmac.compare_digest(candidate, self.previous.encode()))
        return any(matches)

    def proof(self, presented: str) -> PingbackProof | None:
        if capability.looks_like_capability(presented):
            nonce = capability.proven_nonce(presented, (self.current, self.previous))
            return PingbackProof(nonce) if nonce else None
        return PingbackProof(None) if self.accepts(presented) else None


class CallbackAuthenticator:
    """Checks the path secret; on a miss, re-reads the secret at most once per interval.

    The re-read lets a rotated secret work before the cache expires, and the interval keeps a
    flood of forged callbacks from turning into a flood of Secrets Manager calls.
    """

    def __init__(
        self,
        load_secrets: Callable[[bool], CallbackSecrets],
        refresh_interval_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load_secrets
        self._refresh_interval = refresh_interval_seconds
        self._clock = clock
        self._last_forced_refresh = -refresh_interval_seconds

    def verify(self, presented: object) -> PingbackProof | None:
        if not isinstance(presented, str) or not presented or len(presented) > MAX_SECRET_LENGTH:
            return None
        proof = self._load(False).proof(presented)
        if proof is not None:
            return proof
        now = self._clock()
        if now - self._last_forced_refresh < self._refresh_interval:
            return None
        self._last_forced_refresh = now
        return self._load(True).proof(presented)


def parse_callback(
    request: CallbackRequest, received_at: float, nonce: str | None = None
) -> TaskResult:
    """Read id and code from the query (CaptchaAI GET), a form body (2captcha POST) or JSON."""
    if len(request.body) > MAX_CALLBACK_BODY_BYTES:
        raise InvalidCallbackError("body too large")
    fields = dict(request.query)
    if request.method == "POST" and request.body:
        fields.update(_body_fields(request.content_type, request.body))
    elif request.method not in {"GET", "POST"}:
        raise InvalidCallbackError("method not allowed")
    try:
        task_id = normalise_task_id(fields.get("id", ""))
    except ValueError as error:
        raise InvalidCallbackError(str(error)) from None
    code = fields.get("code", "")
    check_code(code)
    return TaskResult(task_id, code, DeliveryPath.CALLBACK, received_at, nonce=nonce)


def check_code(code: object) -> None:
    """A token, or one of the provider's known per-task failure codes; nothing else."""
    if not isinstance(code, str) or not is_plausible_token(code):
        raise InvalidCallbackError(
            f"code must be 1 to {MAX_CODE_LENGTH} token characters [A-Za-z0-9_.=:|-]"
        )
    if is_error_code(code) and not is_known_task_error(code):
        raise InvalidCallbackError("code is an error the provider does not send for a task")


def _body_fields(content_type: str, body: bytes) -> dict[str, str]:
    media_type = content_type.split(";", 1)[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidCallbackError("body is not UTF-8") from None
    if media_type == JSON_CONTENT_TYPE:
        return _json_fields(text)
    if media_type in {FORM_CONTENT_TYPE, ""}:
        return _form_fields(text)
    raise InvalidCallbackError("unsupported content type")


def _json_fields(text: str) -> dict[str, str]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidCallbackError("body is not valid JSON") from None
    if not isinstance(document, dict):
        raise InvalidCallbackError("JSON body must be an object")
    return {
        key: str(value)
        for key, value in document.items()
        if key in {"id", "code"} and isinstance(value, str | int) and not isinstance(value, bool)
    }


def _form_fields(text: str) -> dict[str, str]:
    try:
        parsed = parse_qs(text, strict_parsing=False, max_num_fields=20)
    except ValueError:
        raise InvalidCallbackError("too many form fields") from None
    if any(len(values) > 1 for key, values in parsed.items() if key in {"id", "code"}):
        raise InvalidCallbackError("id and code must appear once")
    return {key: values[0] for key, values in parsed.items()}


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
