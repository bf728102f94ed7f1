"""GeeTest v3 (``gt``, ``challenge``, optional ``api_server``) and v4 (``captcha_id`` or ``gt``,
``version=4``): method ``geetest``. Answers are JSON objects, returned to the worker as fields; a
v3 ``seccode`` ends in ``|jordan``, so GeeTest is never polled in an ``ids=`` batch."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind, ParsedAnswer

IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,128}")
V3_ANSWER = frozenset({"challenge", "validate", "seccode"})
V4_ANSWER = frozenset({"captcha_id", "lot_number", "pass_token", "gen_time", "captcha_output"})


def _identifier(name: str) -> f.Field:
    return f.Field(name, f.matches(IDENTIFIER), "1-128 characters [A-Za-z0-9_-]", 128)


def needs_per_version(fields: Mapping[str, str]) -> tuple[str, str] | None:
    if fields.get("version") == "4":
        if "captcha_id" not in fields and "gt" not in fields:
            return "captcha_id", "captcha_id (or gt) is required for GeeTest v4"
        return None
    for name in ("gt", "challenge"):
        if name not in fields:
            return name, f"{name} is required for GeeTest v3 (send version=4 for v4)"
    return None


def parse_geetest_answer(raw: str, request: Mapping[str, str]) -> ParsedAnswer:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return ParsedAnswer({"text": raw}, fits=False)
    if not isinstance(document, dict):
        return ParsedAnswer({"text": raw}, fits=False)
    expected = V4_ANSWER if request.get("version") == "4" else V3_ANSWER
    fits = expected <= document.keys() and all(isinstance(v, str | int) for v in document.values())
    return ParsedAnswer(dict(document) if fits else {"text": raw}, fits=fits)


KIND = Kind(
    name="geetest",
    methods=frozenset({"geetest"}),
    fields=(
        _identifier("gt"),
        _identifier("challenge"),
        _identifier("captcha_id"),
        f.Field("api_server", f.matches(f.HOSTNAME), "a host name", 253),
        f.Field("version", f.one_of("3", "4"), "3 or 4", 1),
        # initGeetest's offline / new_captcha (v3) and v4's risk_type, as both 2captcha clients
        # send them.
        f.flag("offline"),
        f.flag("new_captcha"),
        f.text("risk_type", 64),
        f.PAGEURL,
        *f.BROWSER,
    ),
    answer_may_hold_pipe=True,
    lifetime="geetest",
    expected_solve_seconds=None,
    parse_answer=parse_geetest_answer,
    sitekey_field="gt",
    cross_check=needs_per_version,
)
