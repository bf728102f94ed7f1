"""A pingback's HTTP request: the id and code from a query, a form body or JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs

from pingback_guard.domain.bounded_json import InvalidJsonError, parse_json
from pingback_guard.domain.errors import InvalidCallbackError
from pingback_guard.domain.task import (
    MAX_ANSWER_BYTES,
    DeliveryPath,
    TaskResult,
    is_storable_answer,
    normalise_task_id,
)
from pingback_guard.provider.answers import is_status_code

MAX_CALLBACK_BODY_BYTES = 16 * 1024
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
JSON_CONTENT_TYPE = "application/json"


@dataclass(frozen=True)
class CallbackRequest:
    """The parts of an HTTP request a pingback can use."""

    method: str
    query: Mapping[str, str]
    content_type: str
    body: bytes


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
    # A token bound to the solver's browser may come with it (CaptchaAI's user_agent).
    user_agent = fields.get("user_agent") or None
    if user_agent is not None and not is_storable_answer(user_agent):
        raise InvalidCallbackError("user_agent must be UTF-8 text")
    return TaskResult(
        task_id, code, DeliveryPath.CALLBACK, received_at, nonce=nonce, user_agent=user_agent
    )


def check_code(code: object) -> None:
    """Any answer, as sent (spaces, any script, JSON, '|'), or a task error; never refused for
    its shape, only for its size or for a code that is not about a task (CAPCHA_NOT_READY)."""
    if not isinstance(code, str) or not is_storable_answer(code):
        raise InvalidCallbackError(f"code must be 1 to {MAX_ANSWER_BYTES} bytes of UTF-8 text")
    if is_status_code(code):
        raise InvalidCallbackError("code is a status the provider does not send for a task")


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
        document = parse_json(text, MAX_CALLBACK_BODY_BYTES)
    except InvalidJsonError as error:
        raise InvalidCallbackError(str(error)) from None
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
