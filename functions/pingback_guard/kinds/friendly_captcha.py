"""Friendly Captcha (proof of work, v1 or v2): method ``friendly_captcha`` (CaptchaAI: ``sitekey``,
``pageurl``, ``version``; no proxy needed; submitted by GET; captchaai 1.0.1, core/registry.py
"friendly_captcha"). The answer is one token in ``request``: its parts are base64 with dots, so
'+' and '/' belong to it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind, ParsedAnswer

SOLUTION = re.compile(r"[A-Za-z0-9_.=:+/-]+")


def parse_solution(raw: str, _request: Mapping[str, str]) -> ParsedAnswer:
    return ParsedAnswer({"token": raw}, fits=SOLUTION.fullmatch(raw) is not None)


KIND = Kind(
    name="friendly_captcha",
    methods=frozenset({"friendly_captcha"}),
    fields=(
        f.sitekey("sitekey"),
        f.PAGEURL,
        f.Field("version", f.one_of("v1", "v2"), "v1 or v2", 2),
        f.PROXY,
        f.PROXYTYPE,
        f.SOFT_ID,
    ),
    answer_may_hold_pipe=False,
    lifetime="friendly_captcha",
    expected_solve_seconds=None,
    parse_answer=parse_solution,
    sitekey_field="sitekey",
)
