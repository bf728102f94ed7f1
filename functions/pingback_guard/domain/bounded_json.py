"""The one JSON parser every route uses: bounded in bytes, in nesting depth and in arrays and
objects, so a deeply nested or bracket-flooded document is a clear refusal (400), never a
RecursionError, and costs C-speed passes before any Python loop looks at it."""

from __future__ import annotations

import json
import re

# No request this stack takes nests deeper than a few levels.
MAX_JSON_DEPTH = 32
# Nor holds more than a few dozen arrays and objects (push: one list; BLS: one list of cells),
# or strings (names and values: a submit has about 20 fields, a push subscription 50 ids).
MAX_JSON_CONTAINERS = 1024
MAX_JSON_STRINGS = 2048
# One JSON string, or the rest of the document after an unclosed quote: possessive, so each
# byte is read once whatever the document holds (an escape flood costs a scan).
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_OPENERS = frozenset(b"[{")
# More openers in a row than the depth allows: too deep, whatever follows.
_DEEPER_THAN_ALLOWED = re.compile(rb"[\[{]{%d}" % (MAX_JSON_DEPTH + 1))


class InvalidJsonError(ValueError):
    """Not one JSON document within the bounds; the message never echoes the input."""


def parse_json(raw: bytes | str, max_bytes: int) -> object:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if len(data) > max_bytes:
        raise InvalidJsonError(f"body must be at most {max_bytes} bytes")
    # Two quotes a string; an escaped one (\\") never ends one. Counted in C before the strings
    # are taken out (one replacement each) or parsed.
    if data.count(b'"') - data.count(b'\\"') > 2 * MAX_JSON_STRINGS:
        raise InvalidJsonError(f"JSON must hold at most {MAX_JSON_STRINGS} strings")
    brackets = _brackets(data)
    if _DEEPER_THAN_ALLOWED.search(brackets) or _depth(brackets) > MAX_JSON_DEPTH:
        raise InvalidJsonError(f"JSON must nest at most {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise InvalidJsonError("body is not valid JSON") from None


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects, brackets inside strings left out."""
    return _depth(_brackets(data))


def _brackets(data: bytes) -> bytes:
    """The document's brackets outside its strings, in order (C-speed passes: a regular
    expression that reads each byte once, then a translation)."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return b""  # too few to nest too deep
    return _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)


def _depth(brackets: bytes) -> int:
    """The deepest nesting of a run of brackets: a Python loop, so only over a bounded run."""
    if len(brackets) > 2 * MAX_JSON_CONTAINERS:
        raise InvalidJsonError(f"JSON must hold at most {MAX_JSON_CONTAINERS} arrays and objects")
    depth = deepest = 0
    for byte in brackets:
        if byte in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest
