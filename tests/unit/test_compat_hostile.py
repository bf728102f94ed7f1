"""Hostile requests to in.php and res.php cost one linear read and one key check (issue 39): the
JSON shape matched in one pass, percent-decoding with unquote_plus's answer, each field bounded
before it is decoded, the first key checked and charged where it is read, a second key refused,
res.php's key read before its body, ids= read once per distinct id and charged per id."""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pingback_guard.domain.request_budgets import RequestLimits
from pingback_guard.domain.worker_keys import WorkerKey, digest_of
from pingback_guard.handlers.protocol import (
    FLAT_JSON_OBJECT,
    MAX_FIELD_BYTES,
    MAX_SUBMIT_BODY_BYTES,
    FieldsRead,
    MalformedRequestError,
    protocol_fields,
    protocol_pairs,
)
from pingback_guard.logic.compat import Event
from pingback_guard.logic.worker_keys import KeyRefusal
from tests.unit.test_compat_logic import PINGBACK, SUBMIT, Stack, words

LIMIT = MAX_SUBMIT_BODY_BYTES
UNKNOWN_KEY = "0123456789abcdef0123456789abcdef"
# Issue 39's body: '{' then escaped quotes, a string that never closes (16,000: 2.6 s of CPU
# through the skeleton regex it replaced).
ESCAPE_FLOOD = b"{" + b'\\"' * 16_000
# Text a client can send (UTF-8 holds no lone surrogate).
UNICODE_TEXT = st.characters(codec="utf-8")


def event(body: bytes, content_type: str, query: str = "") -> dict[str, Any]:
    return {
        "rawQueryString": query,
        "headers": {"content-type": content_type},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def key_lookups(stack: Stack) -> list[str]:
    """The key ids the stack's worker-key table is asked for from now on."""
    asked: list[str] = []
    find = stack.keys.find

    def counting(key_id: str) -> WorkerKey | None:
        asked.append(key_id)
        return find(key_id)

    stack.keys.find = counting  # type: ignore[method-assign]
    return asked


def minute_count(stack: Stack, endpoint: str, key: str) -> int:
    key_id = digest_of(key).key_id
    return sum(
        window.get("requests", 0)
        for (budget_key, _), window in stack.budgets.windows.items()
        if budget_key == f"{endpoint}#{key_id}"
    )


class TestJsonShape:
    @pytest.mark.parametrize(
        "body",
        [
            ESCAPE_FLOOD,
            b'{"a":"' + b'\\"' * 100_000,  # an unclosed string
            b"{" * 500_000,  # deep nesting
            b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            b'{"a":1' + b',"a":1' * 300 + b"}",  # members past the limit
            b'{"a":true}',
            b'{"a":null}',
            b'{"a":NaN}',
            b'{"a":1,}',
            b'{"a":"\x01"}',  # a control character inside a string
        ],
    )
    def test_anything_but_a_small_flat_object_of_strings_and_numbers_is_refused(
        self, body: bytes
    ) -> None:
        with pytest.raises(MalformedRequestError, match="flat JSON object"):
            protocol_fields(event(body, "application/json"), LIMIT)

    def test_the_issue_s_escape_flood_to_res_php_as_text_is_refused_the_same_way(self) -> None:
        with pytest.raises(MalformedRequestError, match="flat JSON object"):
            protocol_fields(event(ESCAPE_FLOOD[: 64 * 1024], "text/plain"), 64 * 1024)

    @settings(max_examples=200, deadline=None)
    @given(
        st.dictionaries(
            st.text(max_size=12),
            st.one_of(
                st.text(max_size=30),
                st.integers(-(10**12), 10**12),
                st.floats(allow_nan=False, allow_infinity=False),
            ),
            max_size=12,
        ),
        st.booleans(),
        st.sampled_from([(",", ":"), (", ", ": ")]),
    )
    def test_every_flat_object_json_writes_is_read_as_json_reads_it(
        self, document: dict[str, Any], ascii_only: bool, separators: tuple[str, str]
    ) -> None:
        text = json.dumps(document, ensure_ascii=ascii_only, separators=separators).encode()
        assert FLAT_JSON_OBJECT.fullmatch(text) is not None
        read = protocol_fields(event(text, "application/json"), LIMIT)
        assert read == {name: str(value) for name, value in json.loads(text).items()}


class TestForms:
    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=UNICODE_TEXT, max_size=40), st.text(alphabet=UNICODE_TEXT))
    def test_percent_decoding_is_unquote_plus_s(self, value: str, raw: str) -> None:
        # Every text a client encodes, and raw text (any '%' in it starting an escape).
        encoded = urllib.parse.quote_plus(value)
        fields = protocol_fields(event(f"v={encoded}".encode(), "text/plain"), LIMIT)
        assert fields == {"v": value}
        as_sent = raw.replace("%", "%25").replace("&", "%26").replace("=", "%3D")
        query = {"rawQueryString": f"v={as_sent}"}
        assert protocol_fields(query, LIMIT) == {"v": urllib.parse.unquote_plus(as_sent)}

    @pytest.mark.parametrize("tail", ["%", "%4", "%zz", "100%"])
    def test_a_percent_that_starts_no_escape_is_refused(self, tail: str) -> None:
        with pytest.raises(MalformedRequestError, match="starts no"):
            protocol_fields({"rawQueryString": f"textinstructions={tail}"}, LIMIT)

    def test_backslashes_and_pluses_keep_their_meaning(self) -> None:
        query = {"rawQueryString": "a=%5Cx41\\u0041+%2B&b=\\N{DASH}"}
        assert protocol_fields(query, LIMIT) == {"a": "\\x41\\u0041 +", "b": "\\N{DASH}"}

    @pytest.mark.parametrize("repeat", [MAX_FIELD_BYTES + 1, MAX_FIELD_BYTES + 100])
    def test_a_field_over_the_largest_is_refused(self, repeat: int) -> None:
        # Past three bytes per character with a name, before it is decoded; after, otherwise.
        flood = b"body=" + b"%41" * repeat
        with pytest.raises(MalformedRequestError, match="a field is over"):
            protocol_fields(event(flood, "application/x-www-form-urlencoded"), LIMIT)
        largest = b"body=" + b"A" * MAX_FIELD_BYTES
        assert len(protocol_fields(event(largest, "text/plain"), LIMIT)["body"]) == MAX_FIELD_BYTES


class TestMultipart:
    @pytest.mark.parametrize(
        "content_type",
        [
            "multipart/form-data; boundary=\u0100x",
            "multipart/form-data; boundary=" + "b" * 71,
            "multipart/form-data",
        ],
    )
    def test_a_boundary_that_is_not_one_is_a_protocol_error(self, content_type: str) -> None:
        body = b"--\xc4\x80x\r\nContent-Disposition: form-data; name=key\r\n\r\nk\r\n--\xc4\x80x--"
        with pytest.raises(MalformedRequestError, match=r"boundary|Latin-1"):
            protocol_fields(event(body, content_type), LIMIT)

    def test_a_part_over_the_largest_field_is_refused_while_it_streams(self) -> None:
        body = (
            b'--f\r\nContent-Disposition: form-data; name="body"\r\n\r\n'
            + b"A" * (MAX_FIELD_BYTES + 1)
            + b"\r\n--f--\r\n"
        )
        with pytest.raises(MalformedRequestError, match="a field is over"):
            protocol_fields(event(body, "multipart/form-data; boundary=f"), LIMIT)

    def test_part_headers_past_their_bound_are_refused(self) -> None:
        body = (
            b'--f\r\nContent-Disposition: form-data; name="a"; filename="'
            + b"x" * 2000
            + b'"\r\n\r\n1\r\n--f--\r\n'
        )
        with pytest.raises(MalformedRequestError, match="headers too large"):
            protocol_fields(event(body, "multipart/form-data; boundary=f"), LIMIT)


class TestTheFirstKey:
    def test_is_looked_up_and_charged_once_however_often_it_is_repeated(self) -> None:
        stack = Stack()
        lookups = key_lookups(stack)
        pairs = [("key", stack.worker_key), *SUBMIT.items()] + [("key", stack.worker_key)] * 50
        assert stack.in_php.submit(pairs, lambda: PINGBACK).event is Event.SUBMITTED
        assert len(lookups) == 1
        assert minute_count(stack, "in.php", stack.worker_key) == 1

    def test_a_second_different_key_refuses_the_request_after_one_lookup(self) -> None:
        # Issue 39: 199 parts alternating two valid keys made 199 lookups for one request.
        stack = Stack()
        lookups = key_lookups(stack)
        alternating = [("key", (stack.worker_key, stack.other_key)[i % 2]) for i in range(199)]
        outcome = stack.in_php.submit([*alternating, *SUBMIT.items()], lambda: PINGBACK)
        assert words(outcome) == (0, KeyRefusal.MALFORMED.value)
        assert len(lookups) == 1 and stack.provider.submitted == []

    def test_is_charged_before_the_rest_is_read_so_a_bad_request_still_costs_one(self) -> None:
        stack = Stack(in_php=RequestLimits(per_second=1, per_minute=1))
        refused = stack.in_php.submit([("key", stack.worker_key), ("method", "nope")], _never)
        assert refused.event is Event.REJECTED
        over = stack.in_php.submit([("key", stack.worker_key), *SUBMIT.items()], _never)
        assert words(over) == (0, "MAX_USER_TURN") and over.event is Event.OVER_BUDGET

    def test_res_php_reads_a_query_string_key_before_its_body(self) -> None:
        stack = Stack()
        unreadable = {
            **event(ESCAPE_FLOOD, "application/json"),
            "rawQueryString": "key=" + UNKNOWN_KEY,
        }
        fields = FieldsRead(protocol_pairs(unreadable, 64 * 1024))
        outcome = stack.res_php.answer(fields)
        assert words(outcome) == (0, KeyRefusal.UNKNOWN.value)
        assert fields.seen == {"key": UNKNOWN_KEY}


def _never() -> Any:
    raise AssertionError("a refused request never reaches the submit")


class TestIds:
    def test_each_distinct_id_is_read_once_and_every_position_answered(self) -> None:
        stack = Stack()
        task_id = stack.submit(stack.worker_key).task_id
        assert task_id is not None
        stack.solve(task_id, "tok")
        ids = ",".join([task_id, "79999999999", task_id, task_id, "x", "79999999999"])
        outcome = stack.res(stack.worker_key, action="get", ids=ids)
        assert (
            outcome.answer.plain
            == "tok|ERROR_WRONG_CAPTCHA_ID|tok|tok|ERROR_WRONG_ID_FORMAT|ERROR_WRONG_CAPTCHA_ID"
        )
        assert [looked for looked, _ in outcome.lookups] == [task_id]

    def test_each_distinct_readable_id_is_charged_to_the_key_s_minute(self) -> None:
        stack = Stack(res_php=RequestLimits(per_second=5, per_minute=12))
        ids = ",".join(f"7200000000{n}" for n in range(10)) + ",72000000000,bad"
        assert stack.res(stack.worker_key, action="get", ids=ids).event is Event.ANSWERED
        assert minute_count(stack, "res.php", stack.worker_key) == 10
        over = stack.res(stack.worker_key, action="get", ids=ids)
        assert words(over) == (0, "ERROR: 1005") and over.event is Event.OVER_BUDGET
        assert minute_count(stack, "res.php", stack.worker_key) == 11
        # Its second counts requests: 2 so far, within 5.
        assert stack.res(stack.worker_key, action="get", id="72000000001").event is Event.ANSWERED
