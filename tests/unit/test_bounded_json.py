"""Every route's JSON parser: bounded in bytes and depth, never a RecursionError."""

from __future__ import annotations

import json

import pytest

from pingback_guard.domain.bounded_json import (
    MAX_JSON_DEPTH,
    InvalidJsonError,
    nesting_depth,
    parse_json,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_documents_within_the_bounds_parse() -> None:
    document = {"a": [1, {"b": "x"}], "s": "[[[[{{{{" * 20}
    assert parse_json(json.dumps(document), 4096) == document
    assert parse_json(nested(MAX_JSON_DEPTH).encode(), 4096) is not None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (nested(MAX_JSON_DEPTH + 1), "nest at most"),
        (nested(100_000), "at most 65536 bytes"),
        (nested(30_000), "nest at most"),
        ('{"a": ' * 40 + "1" + "}" * 40, "nest at most"),
        ("[" * 5000, "nest at most"),
        ("{", "not valid JSON"),
        ("\ud800", "not valid JSON"),
    ],
)
def test_too_deep_too_large_or_malformed_is_refused_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(InvalidJsonError, match=reason):
        parse_json(raw, 65536)


def test_brackets_inside_strings_do_not_count() -> None:
    inside = json.dumps({"text": "[" * 1000 + '\\"' + "{" * 1000})
    assert nesting_depth(inside.encode()) == 1
    assert parse_json(inside, 10_000) == json.loads(inside)
