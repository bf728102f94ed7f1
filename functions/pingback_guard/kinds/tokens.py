"""Answers that are one browser token (reCAPTCHA, hCaptcha, Turnstile, a cf_clearance value)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pingback_guard.kinds.base import ParsedAnswer

# base64url, dots and the separators providers use; anything else is flagged (and still kept).
TOKEN = re.compile(r"[A-Za-z0-9_.=:-]+")


def parse_token(raw: str, _request: Mapping[str, str]) -> ParsedAnswer:
    return ParsedAnswer({"token": raw}, fits=TOKEN.fullmatch(raw) is not None)
