"""The one JSON parser every route uses: bounded in bytes and in nesting depth, so a deeply
nested document is a clear refusal (400), never a RecursionError."""

from __future__ import annotations

import json

# No request this stack takes nests deeper than a few levels.
MAX_JSON_DEPTH = 32
_OPENERS = frozenset(b"[{")
_CLOSERS = frozenset(b"]}")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class InvalidJsonError(ValueError):
    """Not one JSON document within the bounds; the message never echoes the input."""


def parse_json(raw: bytes | str, max_bytes: int) -> object:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if len(data) > max_bytes:
        raise InvalidJsonError(f"body must be at most {max_bytes} bytes")
    if nesting_depth(data) > MAX_JSON_DEPTH:
        raise InvalidJsonError(f"JSON must nest at most {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise InvalidJsonError("body is not valid JSON") from None


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects, brackets inside strings left out (one pass,
    no recursion; a document with few brackets is not scanned at all)."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in _CLOSERS:
            depth -= 1
    return deepest
