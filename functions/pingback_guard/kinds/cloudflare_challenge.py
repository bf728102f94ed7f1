"""Cloudflare's challenge page ("Just a moment..."): method ``cloudflare_challenge``.

The answer is the cf_clearance value; it only works with the user agent and the proxy (IP) it was
solved with. CaptchaAI takes ``pageurl`` with ``proxy`` and ``proxytype`` (no sitekey; the user
agent optional) and answers in ``result`` with the solver's ``user_agent`` beside it (captchaai
1.0.1, core/registry.py "cloudflare_challenge"): the parsed answer carries the user agent back,
the solver's when the provider sent it (the task view's ``user_agent``), else the request's.
"""

from __future__ import annotations

from collections.abc import Mapping

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind, ParsedAnswer
from pingback_guard.kinds.tokens import parse_token


def parse_clearance(raw: str, request: Mapping[str, str]) -> ParsedAnswer:
    token = parse_token(raw, request)
    return ParsedAnswer(
        {"cf_clearance": raw, "user_agent": request.get("userAgent")}, fits=token.fits
    )


KIND = Kind(
    name="cloudflare_challenge",
    methods=frozenset({"cloudflare_challenge"}),
    fields=(
        f.PAGEURL,
        f.USER_AGENT,
        f.PROXY.needed(),
        f.PROXYTYPE.needed(),
        f.COOKIES,
        f.SOFT_ID,
    ),
    answer_may_hold_pipe=False,
    answer_may_carry_user_agent=True,
    lifetime="cloudflare_challenge",
    expected_solve_seconds=None,
    parse_answer=parse_clearance,
)
