"""EventBridge event patterns, as EventBridge (rules) and Pipes (filters) match them.

Supported: nested fields, exact values (strings, numbers, booleans, null), `prefix`, `suffix`,
`equals-ignore-case`, `wildcard` (`*` only), `anything-but` (a value, a list, or a prefix/suffix),
`exists`, `numeric` and `$or`. Anything else raises PatternError when the pattern is checked, so
a template the local runtime cannot honour fails at start instead of matching wrongly.
"""

from __future__ import annotations

import fnmatch
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_NUMERIC_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    "=": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
}
_OPERATORS = frozenset(
    {"prefix", "suffix", "equals-ignore-case", "wildcard", "anything-but", "exists", "numeric"}
)


class PatternError(ValueError):
    """A pattern that is malformed, or uses something not emulated locally."""


def parse_pattern(text: str | Mapping[str, Any]) -> dict[str, Any]:
    """A pattern from its JSON text (or already parsed), checked for what is emulated."""
    pattern = json.loads(text) if isinstance(text, str) else dict(text)
    if not isinstance(pattern, dict):
        raise PatternError("an event pattern is a JSON object")
    _check(pattern)
    return pattern


def matches(pattern: Mapping[str, Any], event: Any) -> bool:
    """Whether `event` (a JSON-like value) matches `pattern`."""
    if not isinstance(event, Mapping):
        return False
    for key, rule in pattern.items():
        if key == "$or":
            if not any(matches(alternative, event) for alternative in rule):
                return False
            continue
        present = key in event
        value = event.get(key)
        if isinstance(rule, Mapping):
            # A missing object is matched as an empty one, so `exists: false` inside it holds.
            if present and not isinstance(value, Mapping):
                return False
            if not matches(rule, value if present else {}):
                return False
        elif not _leaf_matches(rule, present, value):
            return False
    return True


def _leaf_matches(conditions: Sequence[Any], present: bool, value: Any) -> bool:
    if not present:
        return any(_is_exists(condition, False) for condition in conditions)
    values = value if isinstance(value, list) else [value]
    return any(_condition(condition, item) for condition in conditions for item in values)


def _is_exists(condition: Any, wanted: bool) -> bool:
    return isinstance(condition, Mapping) and condition.get("exists") is wanted


def _condition(condition: Any, value: Any) -> bool:
    if not isinstance(condition, Mapping):
        return _equal(condition, value)
    ((name, argument),) = condition.items()
    if name == "exists":
        return bool(argument)
    if name == "anything-but":
        return not _anything_but_excludes(argument, value)
    if name == "numeric":
        return _numeric(argument, value)
    if not isinstance(value, str):
        return False
    text = str(argument)
    checks: dict[str, Callable[[], bool]] = {
        "prefix": lambda: value.startswith(text),
        "suffix": lambda: value.endswith(text),
        "equals-ignore-case": lambda: value.lower() == text.lower(),
        "wildcard": lambda: fnmatch.fnmatchcase(value, text.replace("[", "[[]")),
    }
    return checks[name]()


def _anything_but_excludes(argument: Any, value: Any) -> bool:
    if isinstance(argument, Mapping):
        return _condition(argument, value)
    excluded = argument if isinstance(argument, list) else [argument]
    return any(_equal(item, value) for item in excluded)


def _equal(expected: Any, value: Any) -> bool:
    numbers = (int, float)
    if isinstance(expected, numbers) and not isinstance(expected, bool):
        return isinstance(value, numbers) and not isinstance(value, bool) and expected == value
    return type(expected) is type(value) and bool(expected == value)


def _numeric(argument: Sequence[Any], value: Any) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    pairs = zip(argument[::2], argument[1::2], strict=True)
    return all(_NUMERIC_OPERATORS[name](value, float(bound)) for name, bound in pairs)


def _check(pattern: Mapping[str, Any]) -> None:
    for key, rule in pattern.items():
        if key == "$or":
            if not isinstance(rule, list) or not rule:
                raise PatternError("$or takes a non-empty list of patterns")
            for alternative in rule:
                _check(alternative)
        elif isinstance(rule, Mapping):
            _check(rule)
        elif isinstance(rule, list):
            for condition in rule:
                _check_condition(key, condition)
        else:
            raise PatternError(f"{key}: a pattern value is an object or a list")


def _check_condition(key: str, condition: Any) -> None:
    if not isinstance(condition, Mapping):
        return
    if len(condition) != 1:
        raise PatternError(f"{key}: one operator per condition")
    ((name, argument),) = condition.items()
    if name not in _OPERATORS:
        raise PatternError(f"{key}: operator {name!r} is not emulated locally")
    if (
        name == "anything-but"
        and isinstance(argument, Mapping)
        and set(argument) - {"prefix", "suffix"}
    ):
        raise PatternError(f"{key}: anything-but takes a value, a list, a prefix or a suffix")
    if name == "numeric" and (
        len(argument) % 2 or any(op not in _NUMERIC_OPERATORS for op in argument[::2])
    ):
        raise PatternError(f"{key}: numeric takes operator/number pairs")
    if name == "exists" and not isinstance(argument, bool):
        raise PatternError(f"{key}: exists takes true or false")
