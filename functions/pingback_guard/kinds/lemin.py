"""Lemin puzzles: method ``lemin`` (CaptchaAI: ``captcha_id``, ``div_id``, ``pageurl``, optional
``apiServer``; submitted by GET; captchaai 1.0.1, core/registry.py "lemin" and
helpers/params.py, which sends ``api_server`` as ``apiServer``). The answer is a JSON object
``{"answer": ..., "challenge_uuid": ...}``: what the site posts back to Lemin as ``lemin_answer``
and ``lemin_challengekey`` (https://www.leminnow.com/developers)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind, ParsedAnswer

CAPTCHA_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
ANSWER_FIELDS = ("answer", "challenge_uuid")


def parse_lemin_answer(raw: str, _request: Mapping[str, str]) -> ParsedAnswer:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return ParsedAnswer({"text": raw}, fits=False)
    if not isinstance(document, dict) or not all(
        isinstance(document.get(name), str) for name in ANSWER_FIELDS
    ):
        return ParsedAnswer({"text": raw}, fits=False)
    return ParsedAnswer({name: document[name] for name in ANSWER_FIELDS})


KIND = Kind(
    name="lemin",
    methods=frozenset({"lemin"}),
    fields=(
        f.Field("captcha_id", f.matches(CAPTCHA_ID), "1-128 characters [A-Za-z0-9_-]", 128, True),
        f.Field("div_id", f.matches(CAPTCHA_ID), "1-128 characters [A-Za-z0-9_-]", 128, True),
        f.PAGEURL,
        f.Field("apiServer", f.matches(f.HOSTNAME), "a host name", 253),
        f.PROXY,
        f.PROXYTYPE,
        f.SOFT_ID,
    ),
    answer_may_hold_pipe=False,
    lifetime="lemin",
    expected_solve_seconds=None,
    parse_answer=parse_lemin_answer,
)
