"""Cloudflare Turnstile widgets: method ``turnstile``."""

from __future__ import annotations

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind
from pingback_guard.kinds.tokens import parse_token

KIND = Kind(
    name="turnstile",
    methods=frozenset({"turnstile"}),
    fields=(
        f.sitekey("sitekey"),
        f.PAGEURL,
        f.text("action", 256),
        f.text("data", f.MAX_TEXT_BYTES),
        f.text("pagedata", f.MAX_TEXT_BYTES),
        *f.BROWSER,
    ),
    answer_may_hold_pipe=False,
    lifetime="turnstile",
    expected_solve_seconds=None,
    parse_answer=parse_token,
    sitekey_field="sitekey",
)
