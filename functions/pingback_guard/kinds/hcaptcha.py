"""hCaptcha: method ``hcaptcha``."""

from __future__ import annotations

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind
from pingback_guard.kinds.tokens import parse_token

KIND = Kind(
    name="hcaptcha",
    methods=frozenset({"hcaptcha"}),
    fields=(
        f.sitekey("sitekey"),
        f.PAGEURL,
        f.flag("invisible"),
        f.text("data", f.MAX_TEXT_BYTES),
        f.text("domain", 253),
        f.COOKIES,
        *f.BROWSER,
    ),
    answer_may_hold_pipe=False,
    lifetime="hcaptcha",
    expected_solve_seconds=None,
    parse_answer=parse_token,
    sitekey_field="sitekey",
)
