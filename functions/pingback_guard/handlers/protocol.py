"""What the in.php and res.php handlers share: the protocol's fields from a payload 2.0 event
(query string, then a urlencoded, multipart or JSON body, a body field winning) and the answer
as the provider sends it (text, or JSON with ``json=1``; always 200 unless the stack is down)."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Mapping
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from pingback_guard.domain.bounded_json import InvalidJsonError, parse_json
from pingback_guard.handlers.responses import raw_body
from pingback_guard.kinds.registry import MAX_REQUEST_BYTES
from pingback_guard.logic.compat import ProtocolAnswer

MAX_FIELDS = 200
TEXT_TYPE = "text/plain; charset=utf-8"
JSON_TYPE = "application/json"


class MalformedRequestError(ValueError):
    """A request whose fields cannot be read: the protocol's ERROR_BAD_PARAMETERS."""


def protocol_fields(event: Mapping[str, Any], max_body_bytes: int) -> dict[str, str]:
    fields = _pairs(urllib.parse.parse_qsl(str(event.get("rawQueryString") or ""), True))
    body = raw_body(event)
    if body is None or len(body) > max_body_bytes:
        raise MalformedRequestError("body unreadable or too large")
    if body:
        content_type = _header(event, "content-type")
        fields.update(_body_fields(body, content_type))
    if len(fields) > MAX_FIELDS:
        raise MalformedRequestError("too many fields")
    return fields


def protocol_response(answer: ProtocolAnswer, as_json: bool) -> dict[str, Any]:
    return {
        "statusCode": answer.http_status,
        "headers": {"content-type": JSON_TYPE if as_json else TEXT_TYPE},
        "body": answer.render(as_json),
    }


def _header(event: Mapping[str, Any], name: str) -> str:
    headers = event.get("headers") or {}
    return str(headers.get(name, "")) if isinstance(headers, Mapping) else ""


def _body_fields(body: bytes, content_type: str) -> dict[str, str]:
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "multipart/form-data":
        return _multipart(body, content_type)
    if media_type == JSON_TYPE:
        return _json_object(body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedRequestError("form body is not UTF-8") from None
    return _pairs(urllib.parse.parse_qsl(text, keep_blank_values=True))


def _pairs(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Repeated names: the last one wins, as PHP reads a form."""
    return dict(pairs)


def _json_object(body: bytes) -> dict[str, str]:
    try:
        document = parse_json(body, MAX_REQUEST_BYTES)
    except InvalidJsonError as error:
        raise MalformedRequestError(str(error)) from None
    if not isinstance(document, dict):
        raise MalformedRequestError("body is not a JSON object")
    fields: dict[str, str] = {}
    for name, value in document.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise MalformedRequestError("JSON fields must be strings or numbers")
        fields[str(name)] = str(value)
    return fields


def _multipart(body: bytes, content_type: str) -> dict[str, str]:
    """Text parts as they are; a file part (an image) as base64, the protocol's other form."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    try:
        message = BytesParser(policy=HTTP).parsebytes(head + body)
    except (ValueError, TypeError):
        raise MalformedRequestError("multipart body unreadable") from None
    if not message.is_multipart():
        raise MalformedRequestError("multipart body without parts")
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or not name:
            raise MalformedRequestError("multipart part without a name")
        fields[name] = _part_value(part)
    return fields


def _part_value(part: Message) -> str:
    payload = part.get_payload(decode=True)
    data = payload if isinstance(payload, bytes) else b""
    if part.get_filename() is not None:
        return base64.b64encode(data).decode("ascii")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedRequestError("multipart text part is not UTF-8") from None
