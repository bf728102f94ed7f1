"""HTTP API (payload 2.0) request and response shapes shared by the HTTP handlers."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pingback_guard.domain.bounded_json import InvalidJsonError, parse_json
from pingback_guard.domain.task import normalise_task_id


def json_response(
    status: int, body: dict[str, Any], retry_after: int | None = None
) -> dict[str, Any]:
    """``retry_after``: whole seconds until asking again is worthwhile (Retry-After header)."""
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return {
        "statusCode": status,
        "headers": headers,
        "body": json.dumps(body, separators=(",", ":")),
    }


class ApiError(StrEnum):
    """The ``error`` codes of the JSON routes; docs/api-errors.md lists them with their status."""

    INVALID_BODY = "invalid_body"
    INVALID_FIELD = "invalid_field"
    INVALID_TASK_ID = "invalid_task_id"
    INVALID_PINGBACK_URL = "invalid_pingback_url"
    FORBIDDEN = "forbidden"
    UNKNOWN_TASK = "unknown_task"
    CONFLICT = "conflict"
    NOT_SOLVED = "not_solved"
    ALREADY_REPORTED = "already_reported"
    REPORT_WINDOW_CLOSED = "report_window_closed"
    PROVIDER_REJECTED = "provider_rejected"
    PROVIDER_ACCOUNT_ERROR = "provider_account_error"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    STORE_UNAVAILABLE = "store_unavailable"
    UNAVAILABLE = "unavailable"
    NOT_RECORDED = "not_recorded"


def error_response(status: int, error: ApiError, reason: str, **extra: str) -> dict[str, Any]:
    """Every JSON route's refusal: ``{"error": code, "reason": text naming the field}``, plus
    what the caller needs to act on it (the task id of a task accepted but not recorded)."""
    return json_response(status, {"error": error.value, "reason": reason, **extra})


def text_response(status: int, body: str) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "text/plain"}, "body": body}


def raw_body(event: Mapping[str, Any]) -> bytes | None:
    """The body as bytes whether API Gateway base64-encoded it or not; None when undecodable."""
    body = event.get("body")
    if not body:
        return b""
    if not event.get("isBase64Encoded"):
        return str(body).encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None


class InvalidBodyError(ValueError):
    """A request body that is not one JSON document of reasonable depth and size."""


MAX_JSON_BODY_BYTES = 64 * 1024


def json_body(request: Mapping[str, Any], max_bytes: int = MAX_JSON_BODY_BYTES) -> object:
    """The JSON document in the body (None when empty); any malformed input is InvalidBodyError."""
    body = raw_body(request)
    if body is None:
        raise InvalidBodyError("body is not valid base64")
    if not body:
        return None
    try:
        return parse_json(body, max_bytes)
    except InvalidJsonError as error:
        raise InvalidBodyError(str(error)) from None


def path_task_id(request: Mapping[str, Any]) -> str:
    """The route's ``{task_id}``, normalised; ValueError when it is not a task id."""
    return normalise_task_id((request.get("pathParameters") or {}).get("task_id", ""))
