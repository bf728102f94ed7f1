"""in.php's fields read as they stream: parts counted while parsed and stopped at the limit, and an
unknown key refused where it is read, before the rest of the body is parsed."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from pingback_guard.handlers.protocol import (
    MAX_FIELDS,
    FieldsRead,
    MalformedRequestError,
    protocol_fields,
    protocol_pairs,
)
from pingback_guard.logic.compat import Event
from pingback_guard.logic.worker_keys import KeyRefusal
from tests.unit.test_compat_logic import PINGBACK, SUBMIT, Stack

LIMIT = 2_500_000
UNKNOWN_KEY = "0123456789abcdef0123456789abcdef"
BOUNDARY = "b0undary"


def event(
    body: bytes = b"", content_type: str = "", query: str = "", *, encoded: bool = True
) -> dict[str, Any]:
    """A payload 2.0 event as API Gateway delivers a POST /in.php (a body base64-encoded)."""
    return {
        "rawQueryString": query,
        "headers": {"content-type": content_type} if content_type else {},
        "body": base64.b64encode(body).decode() if encoded else body.decode(),
        "isBase64Encoded": encoded,
    }


def as_requests_posts(data: dict[str, str], files: dict[str, bytes] | None = None) -> Any:
    """The body and content type requests (2captcha-python's transport) sends, built offline."""
    prepared = requests.Request(
        "POST", "https://api.test/in.php", data=data, files=files or {}
    ).prepare()
    assert isinstance(prepared.body, bytes)
    return event(prepared.body, prepared.headers["Content-Type"])


def multipart(parts: list[tuple[bytes, bytes]], *, closed: bool = True) -> dict[str, Any]:
    body = b"".join(
        b"--"
        + BOUNDARY.encode()
        + b'\r\nContent-Disposition: form-data; name="'
        + name
        + b'"\r\n\r\n'
        + value
        + b"\r\n"
        for name, value in parts
    )
    if closed:
        body += b"--" + BOUNDARY.encode() + b"--\r\n"
    return event(body, f"multipart/form-data; boundary={BOUNDARY}")


def test_a_multipart_form_as_requests_sends_it_is_read_with_its_file_as_base64() -> None:
    picture = b"\x89PNG" + bytes(range(256)) * 2
    fields = protocol_fields(
        as_requests_posts({"key": "k", "method": "post", "lang": "ёлка"}, {"file": picture}),
        LIMIT,
    )
    assert fields == {
        "key": "k",
        "method": "post",
        "lang": "ёлка",
        "file": base64.b64encode(picture).decode(),
    }


def test_parts_are_counted_as_parsed_and_parsing_stops_at_the_limit() -> None:
    # Past the limit a part no parser could read: only the count stops the parse before it.
    flood = [(b"x", b"1")] * (MAX_FIELDS + 1) + [(b"\xff\xfe", b"unreadable")]
    with pytest.raises(MalformedRequestError, match="too many fields"):
        protocol_fields(multipart(flood), LIMIT)


def test_one_name_repeated_counts_every_part() -> None:
    with pytest.raises(MalformedRequestError, match="too many fields"):
        protocol_fields(multipart([(b"key", b"x")] * (MAX_FIELDS + 1)), LIMIT)
    assert protocol_fields(multipart([(b"key", b"x")] * MAX_FIELDS), LIMIT) == {"key": "x"}


def test_a_urlencoded_flood_is_refused_at_the_limit() -> None:
    body = "&".join(f"f{i}=1" for i in range(48_000)).encode()
    with pytest.raises(MalformedRequestError, match="too many fields"):
        protocol_fields(event(body, "application/x-www-form-urlencoded"), LIMIT)


def test_query_and_body_fields_count_together() -> None:
    query = "&".join(f"q{i}=1" for i in range(MAX_FIELDS))
    with pytest.raises(MalformedRequestError, match="too many fields"):
        protocol_fields(event(b"method=post", "application/x-www-form-urlencoded", query), LIMIT)


def test_a_multipart_body_cut_before_its_closing_boundary_is_unreadable() -> None:
    with pytest.raises(MalformedRequestError, match="closing boundary"):
        protocol_fields(multipart([(b"key", b"x")], closed=False), LIMIT)


def test_a_body_too_large_is_refused_by_its_encoded_length_before_decoding() -> None:
    too_large = {**event(), "body": "!" * (LIMIT * 4 // 3 + 8)}  # not even base64
    with pytest.raises(MalformedRequestError, match="too large"):
        protocol_fields(too_large, LIMIT)


def test_json_without_a_content_type_is_read_as_json_first_flag_first() -> None:
    # @2captcha/captcha-solver's canvas(): JSON.stringify(payload) posted with fetch's text/plain.
    document = {"key": "k", "method": "base64", "json": 1, "canvas": 1}
    pairs = list(
        protocol_pairs(
            event(json.dumps(document).encode(), "text/plain;charset=UTF-8", encoded=False),
            LIMIT,
        )
    )
    assert pairs[0] == ("json", "1") and dict(pairs) == {k: str(v) for k, v in document.items()}


class CountingPairs:
    """Pairs handed out one at a time, counting how many were taken."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs = pairs
        self.taken = 0

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for pair in self.pairs:
            self.taken += 1
            yield pair


def test_an_unknown_key_is_refused_where_it_is_read_and_nothing_after_is_read() -> None:
    stack = Stack()
    pairs = CountingPairs([("method", "post"), ("key", UNKNOWN_KEY), *[("x", "1")] * 10])
    outcome = stack.in_php.submit(pairs, lambda: PINGBACK)
    assert outcome.event is Event.KEY_REFUSED and outcome.answer.plain == KeyRefusal.UNKNOWN.value
    assert pairs.taken == 2


def test_an_unknown_key_in_the_query_string_is_refused_before_the_body_is_decoded() -> None:
    stack = Stack()
    unreadable_body = {**event(), "body": "not base64 at all!", "isBase64Encoded": True}
    fields = FieldsRead(
        protocol_pairs({**unreadable_body, "rawQueryString": f"key={UNKNOWN_KEY}"}, LIMIT)
    )
    outcome = stack.in_php.submit(fields, lambda: PINGBACK)
    assert outcome.event is Event.KEY_REFUSED and fields.seen == {"key": UNKNOWN_KEY}


def test_a_later_key_is_the_key_and_it_is_checked_too() -> None:
    stack = Stack()
    good_then_unknown = [("key", stack.worker_key), *SUBMIT.items(), ("key", UNKNOWN_KEY)]
    assert stack.in_php.submit(good_then_unknown, lambda: PINGBACK).event is Event.KEY_REFUSED
    keyless_then_good = [*SUBMIT.items(), ("key", stack.worker_key)]
    assert stack.in_php.submit(keyless_then_good, lambda: PINGBACK).event is Event.SUBMITTED


def test_a_body_with_no_key_is_read_whole_then_refused_as_keyless() -> None:
    stack = Stack()
    outcome = stack.in_php.submit(list(SUBMIT.items()), lambda: PINGBACK)
    assert outcome.answer.plain == KeyRefusal.MALFORMED.value


def json_event(document: bytes) -> dict[str, Any]:
    return event(document, "application/json")


def test_a_json_flood_of_members_is_refused_before_it_is_parsed() -> None:
    flood = json.dumps({f"f{i}": "1" for i in range(MAX_FIELDS * 2 + 1)}).encode()
    with pytest.raises(MalformedRequestError, match="fields limit"):
        protocol_fields(json_event(flood), LIMIT)
    numbers = json.dumps({f"f{i}": 1 for i in range(MAX_FIELDS + 1)}).encode()
    with pytest.raises(MalformedRequestError, match="fields limit"):
        protocol_fields(json_event(numbers), LIMIT)


@pytest.mark.parametrize(
    "document", [b'{"a": [1, 2, 3]}', b'{"a": {"b": 1}}', b"[1]", b'{"a": 1}{"b": 2}']
)
def test_a_json_body_that_is_not_one_flat_object_is_refused(document: bytes) -> None:
    with pytest.raises(MalformedRequestError):
        protocol_fields(json_event(document), LIMIT)


def test_brackets_commas_and_escaped_quotes_inside_json_text_are_text() -> None:
    text = 'Click [the "red", {round}] one, then \\ the next'
    fields = protocol_fields(json_event(json.dumps({"textinstructions": text}).encode()), LIMIT)
    assert fields == {"textinstructions": text}
