"""reCAPTCHA v2, v3, Enterprise and invisible: method ``userrecaptcha``."""

from __future__ import annotations

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind
from pingback_guard.kinds.tokens import parse_token

KIND = Kind(
    name="recaptcha",
    methods=frozenset({"userrecaptcha"}),
    fields=(
        f.sitekey("googlekey"),
        f.PAGEURL,
        f.Field("version", f.one_of("v2", "v3"), "v2 or v3", 2),
        f.text("action", 256),
        f.Field("min_score", f.score, "a decimal from 0.1 to 0.9", 5),
        f.flag("invisible"),
        f.flag("enterprise"),
        f.text("data-s", f.MAX_TEXT_BYTES),
        f.Field(
            "domain", f.one_of("google.com", "recaptcha.net"), "google.com or recaptcha.net", 13
        ),
        f.COOKIES,
        *f.BROWSER,
    ),
    answer_may_hold_pipe=False,
    lifetime="recaptcha",
    expected_solve_seconds=None,
    parse_answer=parse_token,
    sitekey_field="googlekey",
)
