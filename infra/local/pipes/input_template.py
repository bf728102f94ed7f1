"""EventBridge Pipes input templates: `<$.json.path>` and `<aws.pipes.*>` placeholders.

As Pipes does (docs: "Amazon EventBridge Pipes input transformation"): a string value is written
without quotes (a template quotes its string placeholders) but JSON-escaped, since Pipes replaces
the placeholders "to ensure valid JSON output" (only `aws.pipes.event.json` "isn't escaped"): a
GeeTest answer's quotes or a backslash stay inside their string; an object, array, number,
boolean or null is written as JSON; a path the event does not have is written as nothing.
Paths: dot notation, dashes, underscores, alphanumerics, array indices.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"<(\$(?:\.[A-Za-z0-9_/\-]+|\[\d+\])*|aws\.pipes\.[A-Za-z0-9.\-]+)>")
_SEGMENT = re.compile(r"\.([A-Za-z0-9_/\-]+)|\[(\d+)\]")
_MISSING = object()


class TemplateOutputError(ValueError):
    """The rendered template is not what the target takes (for an event bus: a JSON object)."""


def render(template: str, event: Any, reserved: Mapping[str, Any]) -> str:
    """The template with every placeholder replaced from `event` or the pipe's variables."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        value = json_path(event, name) if name.startswith("$") else reserved.get(name, _MISSING)
        if value is _MISSING:
            return ""
        if isinstance(value, str):
            return json.dumps(value, ensure_ascii=False)[1:-1]
        return json.dumps(value, separators=(",", ":"))

    return _PLACEHOLDER.sub(value_of, template)


def render_detail(template: str | None, event: Any, reserved: Mapping[str, Any]) -> dict[str, Any]:
    """The Detail of the event a pipe puts on a bus: the template's output, or the whole event."""
    if template is None:
        return dict(event)
    text = render(template, event, reserved)
    try:
        detail = json.loads(text)
    except ValueError:
        raise TemplateOutputError("the input template did not render valid JSON") from None
    if not isinstance(detail, dict):
        raise TemplateOutputError("an event's detail must be a JSON object")
    return detail


def json_path(document: Any, path: str) -> Any:
    """The value at a `$.a.b[0]` path, or _MISSING."""
    value = document
    for name, index in _SEGMENT.findall(path[1:]):
        if name:
            if not isinstance(value, Mapping) or name not in value:
                return _MISSING
            value = value[name]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return _MISSING
            value = value[int(index)]
    return value
