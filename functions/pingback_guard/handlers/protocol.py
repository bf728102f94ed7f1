"""What the in.php and res.php handlers share: the protocol's fields from a payload 2.0 event
(query string, then a urlencoded, multipart or JSON body, a body field winning) and the answer
as the provider sends it (text, or JSON with ``json=1``; always 200 unless the stack is down).

The fields are read lazily, one at a time, and counted as they are read: a caller that stops at
a refused key never pays for the rest of the body, and no body makes more than MAX_FIELDS of
them (a multipart body is parsed by python-multipart as it is fed, never built whole first).
Every step is linear in the body's size and runs in C where it can (one anchored match for a
JSON body's shape, str/bytes methods and a codec for percent-decoding): no request costs more
than reading it once (bench/hostile_input.py prints the worst bodies found).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

from pingback_guard.handlers.responses import raw_body
from pingback_guard.kinds.registry import KINDS, MAX_REQUEST_BYTES
from pingback_guard.logic.compat import ProtocolAnswer

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

# Parts or pairs of one request, query string and body together (a client sends about 20).
MAX_FIELDS = 200
# Fed to the multipart parser a slice at a time, so a refusal stops it within one slice.
MULTIPART_SLICE_BYTES = 4096
# A part's headers: Content-Disposition and Content-Type, with room to spare.
MAX_PART_HEADERS = 4
# in.php's body: the largest kind's request at its bounds (BLS: nine 100 KB cells, as POST /tasks
# takes it) as a form: percent-encoding makes base64's '+' and '/' three bytes (1.06x for random
# images; 1 MB refused a BLS request POST /tasks accepts).
MAX_SUBMIT_BODY_BYTES = 2 * MAX_REQUEST_BYTES
# res.php's body: a handful of short fields (ids= of 100 ids is about 2 KB).
MAX_RESULT_BODY_BYTES = 64 * 1024
# The largest value any field may hold (a base64 image), and a name with room to spare.
MAX_FIELD_BYTES = max(spec.max_bytes for kind in KINDS for spec in kind.fields)
MAX_NAME_BYTES = 64
# A urlencoded pair, refused by its length before it is decoded: every byte percent-encoded.
MAX_ENCODED_PAIR_BYTES = 3 * (MAX_NAME_BYTES + 1 + MAX_FIELD_BYTES)
# RFC 2046, 5.1.1: a boundary is 1 to 70 characters.
MAX_BOUNDARY_BYTES = 70
# A part's header lines: a Content-Disposition with its name and a file name, and a type.
MAX_PART_HEADER_BYTES = 1024
TEXT_TYPE = "text/plain; charset=utf-8"
JSON_TYPE = "application/json"
_JSON_SPACE = rb"[ \t\n\r]*+"
_JSON_STRING = rb'"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*+"'
_JSON_NUMBER = rb"-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+"
_JSON_MEMBER = (
    _JSON_SPACE
    + _JSON_STRING
    + _JSON_SPACE
    + rb":"
    + _JSON_SPACE
    + rb"(?:"
    + _JSON_STRING
    + rb"|"
    + _JSON_NUMBER
    + rb")"
    + _JSON_SPACE
)
# One JSON object of at most MAX_FIELDS members, each a string or a number (RFC 8259's grammar),
# matched in one anchored pass: every quantifier is possessive (never backtracks), so a body
# costs one scan whatever it holds (an unclosed string, a flood of escapes, deep nesting).
FLAT_JSON_OBJECT = re.compile(
    _JSON_SPACE
    + rb"\{(?:"
    + _JSON_MEMBER
    + rb"(?:,"
    + _JSON_MEMBER
    + rb"){0,%d}+|" % (MAX_FIELDS - 1)
    + _JSON_SPACE
    + rb")\}"
    + _JSON_SPACE
)


class MalformedRequestError(ValueError):
    """A request whose fields cannot be read: the protocol's ERROR_BAD_PARAMETERS."""


def protocol_fields(event: Mapping[str, Any], max_body_bytes: int) -> dict[str, str]:
    """Every field of the request; a repeated name keeps its last value, as PHP reads a form."""
    return dict(protocol_pairs(event, max_body_bytes))


def protocol_pairs(event: Mapping[str, Any], max_body_bytes: int) -> Iterator[tuple[str, str]]:
    """The request's fields in the order they are read, the query string's first. The body is
    looked at only once the query string's fields are taken; MalformedRequestError as soon as an
    unreadable part, or the field past MAX_FIELDS, is reached."""
    query = _query_pairs(str(event.get("rawQueryString") or ""))
    for count, pair in enumerate(chain(query, _body_pairs(event, max_body_bytes)), start=1):
        if count > MAX_FIELDS:
            raise MalformedRequestError("too many fields")
        if len(pair[1]) > MAX_FIELD_BYTES:
            raise MalformedRequestError(f"a field is over {MAX_FIELD_BYTES} bytes")
        yield pair


class FieldsRead:
    """Pairs passed on as they are read; ``seen`` holds the ones read so far."""

    def __init__(self, pairs: Iterator[tuple[str, str]]) -> None:
        self._pairs = pairs
        self.seen: dict[str, str] = {}

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for name, value in self._pairs:
            self.seen[name] = value
            yield name, value


def protocol_response(answer: ProtocolAnswer, as_json: bool) -> dict[str, Any]:
    return {
        "statusCode": answer.http_status,
        "headers": {"content-type": JSON_TYPE if as_json else TEXT_TYPE},
        "body": answer.render(as_json),
    }


def _header(event: Mapping[str, Any], name: str) -> str:
    headers = event.get("headers") or {}
    return str(headers.get(name, "")) if isinstance(headers, Mapping) else ""


def _body_pairs(event: Mapping[str, Any], max_body_bytes: int) -> Iterator[tuple[str, str]]:
    body = _bounded_body(event, max_body_bytes)
    if not body:
        return
    content_type = _header(event, "content-type")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "multipart/form-data":
        yield from _multipart_pairs(body, content_type)
    elif media_type == JSON_TYPE or _is_json_as_text(media_type, body):
        yield from _json_pairs(body)
    else:
        _utf8(body, "form body")
        yield from _form_pairs(body)


def _bounded_body(event: Mapping[str, Any], max_body_bytes: int) -> bytes:
    """The body, refused by its encoded length before any of it is decoded when too large."""
    encoded = str(event.get("body") or "")
    if (len(encoded) * 3 // 4 if event.get("isBase64Encoded") else len(encoded)) > max_body_bytes:
        raise MalformedRequestError("body too large")
    body = raw_body(event)
    if body is None or len(body) > max_body_bytes:
        raise MalformedRequestError("body unreadable or too large")
    return body


def _is_json_as_text(media_type: str, body: bytes) -> bool:
    """@2captcha/captcha-solver 1.3.9's canvas() posts its JSON without a content type, so fetch
    labels it text/plain: an object there is read as the JSON it is."""
    return media_type in {"", "text/plain"} and body.lstrip()[:1] == b"{"


def _query_pairs(query: str) -> Iterator[tuple[str, str]]:
    try:
        raw = query.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no client's query string holds one
        raise MalformedRequestError("query string is not UTF-8") from None
    return _form_pairs(raw)


def _form_pairs(raw: bytes) -> Iterator[tuple[str, str]]:
    """urlencoded pairs as parse_qsl reads them (blank values kept), split no further than one
    past the limit: the rest of a flood is never looked at. Each pair is refused by its length
    before it is decoded."""
    for index, piece in enumerate(raw.split(b"&", MAX_FIELDS)):
        if index == MAX_FIELDS and piece:  # the rest of the text, unsplit
            raise MalformedRequestError("too many fields")
        if len(piece) > MAX_ENCODED_PAIR_BYTES:
            raise MalformedRequestError(f"a field is over {MAX_FIELD_BYTES} bytes")
        if piece:
            name, _, value = piece.partition(b"=")
            yield _percent_decoded(name), _percent_decoded(value)


def _percent_decoded(raw: bytes) -> str:
    """urllib.parse.unquote_plus's answer (UTF-8, malformed sequences replaced), computed by
    C code whatever the text holds: each %XX becomes the codec's \\xXX escape (a backslash
    already there is escaped first), so one pass of unicode_escape decodes every byte; unquote's
    own loop spends a Python step per escape (a 2.4 MB flood of them took 175 ms). A '%' that
    starts no %XX escape, which no client sends (each encodes '%' as %25), is refused: the codec
    finds it."""
    escaped = raw.replace(b"\\", b"\\x5c").replace(b"+", b" ").replace(b"%", b"\\x")
    try:
        octets = escaped.decode("unicode_escape").encode("latin-1")
    except UnicodeDecodeError:
        raise MalformedRequestError("a '%' that starts no %XX escape") from None
    return octets.decode("utf-8", "replace")


def _json_pairs(body: bytes) -> Iterator[tuple[str, str]]:
    """A flat JSON object's fields, ``json`` first: the whole document is read anyway, and a
    refusal met on the way answers in the form the client asked for. Its shape is matched in one
    pass before it is parsed: a flood of members, of nested values or of escapes costs a scan."""
    if len(body) > MAX_REQUEST_BYTES:
        raise MalformedRequestError(f"body must be at most {MAX_REQUEST_BYTES} bytes")
    if FLAT_JSON_OBJECT.fullmatch(body) is None:
        raise MalformedRequestError(
            "body is not one flat JSON object of strings and numbers, at most the fields limit"
        )
    try:
        document = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        raise MalformedRequestError("body is not valid JSON") from None
    if not isinstance(document, dict):
        raise MalformedRequestError("body is not a JSON object")
    for name, value in sorted(document.items(), key=lambda item: item[0] != "json"):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise MalformedRequestError("JSON fields must be strings or numbers")
        yield str(name), str(value)


def _multipart_pairs(body: bytes, content_type: str) -> Iterator[tuple[str, str]]:
    """Text parts as they are; a file part (an image) as base64, the protocol's other form."""
    # Loaded by the first multipart body: res.php and urlencoded or JSON submits never pay for
    # the import (bench/compat_refusals.py prints it).
    from python_multipart.exceptions import FormParserError, MultipartParseError
    from python_multipart.multipart import MultipartParser, parse_options_header

    try:
        _, options = parse_options_header(content_type)
    except UnicodeEncodeError:  # python-multipart reads the header as Latin-1
        raise MalformedRequestError("multipart content type is not Latin-1") from None
    boundary = options.get(b"boundary")
    if not boundary or len(boundary) > MAX_BOUNDARY_BYTES:
        raise MalformedRequestError("multipart body without a boundary of 1 to 70 characters")
    parts = _PartCollector()
    try:
        parser = MultipartParser(boundary, parts.callbacks(), max_header_count=MAX_PART_HEADERS)
        for start in range(0, len(body), MULTIPART_SLICE_BYTES):
            parser.write(body[start : start + MULTIPART_SLICE_BYTES])
            yield from parts.take()
    except (MultipartParseError, FormParserError):
        raise MalformedRequestError("multipart body unreadable") from None
    if not parts.ended:
        raise MalformedRequestError("multipart body without its closing boundary")


class _PartCollector:
    """Receives python-multipart's callbacks; ``take`` hands over the parts completed so far.
    Past MAX_FIELDS parts it stops the parser (inside write) instead of collecting more."""

    def __init__(self) -> None:
        self.ended = False
        self._begun = 0
        self._done: list[tuple[str, str]] = []
        self._headers: list[tuple[bytearray, bytearray]] = []
        self._header_bytes = 0
        self._data: list[bytes] = []
        self._data_bytes = 0

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_begin": self._header_begin,
            "on_part_data": self._part_data,
            "on_part_end": self._end_part,
            "on_end": self._end,
        }

    def take(self) -> list[tuple[str, str]]:
        done, self._done = self._done, []
        return done

    def _begin(self) -> None:
        self._begun += 1
        if self._begun > MAX_FIELDS:
            raise MalformedRequestError("too many fields")
        self._headers, self._data = [], []
        self._header_bytes = self._data_bytes = 0

    def _header_begin(self) -> None:
        self._headers.append((bytearray(), bytearray()))

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header_bytes(end - start)
        self._headers[-1][0].extend(data[start:end])

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header_bytes(end - start)
        self._headers[-1][1].extend(data[start:end])

    def _count_header_bytes(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > MAX_PART_HEADER_BYTES:
            raise MalformedRequestError("multipart part headers too large")

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        self._data_bytes += end - start
        if self._data_bytes > MAX_FIELD_BYTES:
            raise MalformedRequestError(f"a field is over {MAX_FIELD_BYTES} bytes")
        self._data.append(data[start:end])

    def _end_part(self) -> None:
        from python_multipart.multipart import parse_options_header

        disposition = next(
            (
                bytes(value)
                for field, value in self._headers
                if field.lower() == b"content-disposition"
            ),
            b"",
        )
        _, options = parse_options_header(disposition)
        name = _utf8(options.get(b"name", b""), "multipart part name")
        if not name:
            raise MalformedRequestError("multipart part without a name")
        data = b"".join(self._data)
        if b"filename" in options:
            self._done.append((name, base64.b64encode(data).decode("ascii")))
        else:
            self._done.append((name, _utf8(data, "multipart text part")))

    def _end(self) -> None:
        self.ended = True


def _utf8(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedRequestError(f"{what} is not UTF-8") from None
