"""Every route's JSON parser: bounded in bytes and depth, never a RecursionError."""

from __future__ import annotations

import json

import pytest

from pingback_guard.domain.bounded_json import (
    MAX_JSON_CONTAINERS,
    MAX_JSON_DEPTH,
    MAX_JSON_STRINGS,
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


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        # Issue 39: each made a Python loop (or a regex replacement) run once per byte or string.
        ("[" + "[]," * MAX_JSON_CONTAINERS + "[]]", "at most 1024 arrays and objects"),
        ("[" * 33 + "]" * 1_000_000, "nest at most"),
        ("[" + '"a",' * MAX_JSON_STRINGS + '"a"]', "at most 2048 strings"),
        ('{"a": "' + '\\"' * 500_000 + "[" * 40, "not valid JSON"),
    ],
)
def test_floods_of_brackets_or_strings_are_refused_before_they_are_parsed(
    raw: str, reason: str
) -> None:
    with pytest.raises(InvalidJsonError, match=reason):
        parse_json(raw, 2_000_000)


def test_the_bounds_leave_every_document_a_route_takes() -> None:
    document = {"task_ids": [str(n) for n in range(50)], "nested": [[{"a": [1]}]] * 100}
    assert parse_json(json.dumps(document), 65536) == document
