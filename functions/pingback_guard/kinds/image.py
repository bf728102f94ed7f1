"""Image CAPTCHAs (OCR, grids, clicks): methods ``base64`` (``body``) and ``post`` (``file``).

The image travels base64 in the request (``file`` holds the uploaded bytes base64-encoded and is
sent to the provider as a multipart upload). It is a secret of the submit: sent, never kept.
Answers are free text (spaces, any script, '|'), a grid's ``click:1/4/6`` or a click CAPTCHA's
``coordinates:x=39,y=59;x=252,y=72``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind, ParsedAnswer

GRID = re.compile(r"click:([0-9]{1,3}(?:/[0-9]{1,3})*)")
POINT = re.compile(r"x=(-?[0-9]{1,5}),y=(-?[0-9]{1,5})")

OPTIONS = (
    f.flag("phrase"),
    f.flag("regsense"),
    f.number("numeric", 0, 4),
    f.flag("calc"),
    f.number("min_len", 0, 20),
    f.number("max_len", 0, 20),
    f.number("language", 0, 2),
    f.Field("lang", f.matches(re.compile(r"[a-z]{2,3}(-[A-Za-z]{2,4})?")), "a language code", 8),
    f.text("textinstructions", 1024),
    f.image("imginstructions").optional(),
    f.flag("recaptcha"),
    f.number("recaptcharows", 1, 9),
    f.number("recaptchacols", 1, 9),
    f.flag("coordinatescaptcha"),
    f.flag("canvas"),
    f.flag("can_no_answer"),
    # Grid and click options both 2captcha clients send: tiles to pick, the image class a grid is
    # read by, and the id of an earlier request on the same challenge.
    f.number("min_clicks", 0, 100),
    f.number("max_clicks", 0, 100),
    f.text("img_type", 64),
    f.Field("previousID", f.whole_number(0, 10**20), "a task id", 20),
    # CaptchaAI's grid (method base64 with ``instructions`` and ``grid_size``) and its normal
    # image's case flag (captchaai 1.0.1, client.py ``grid`` and ``normal``).
    f.text("instructions", 1024),
    f.Field("grid_size", f.one_of("3x3", "4x4"), "3x3 or 4x4", 3),
    f.flag("caseSensitive"),
    f.SOFT_ID,
)


def parse_image_answer(raw: str, request: Mapping[str, str]) -> ParsedAnswer:
    if "grid_size" in request:
        return parse_grid_cells(raw)
    if raw.startswith("click:"):
        grid = GRID.fullmatch(raw)
        if grid is None:
            return ParsedAnswer({"type": "text", "text": raw}, fits=False)
        return ParsedAnswer({"type": "grid", "cells": [int(c) for c in grid.group(1).split("/")]})
    if raw.startswith("coordinates:"):
        parts = raw.removeprefix("coordinates:").split(";")
        points = [POINT.fullmatch(part) for part in parts]
        if not all(points):
            return ParsedAnswer({"type": "text", "text": raw}, fits=False)
        return ParsedAnswer(
            {
                "type": "coordinates",
                "points": [{"x": int(p.group(1)), "y": int(p.group(2))} for p in points if p],
            }
        )
    return ParsedAnswer({"type": "text", "text": raw})


def _image_kind(method: str, image_field: str) -> Kind:
    return Kind(
        name="image",
        methods=frozenset({method}),
        fields=(f.image(image_field), *OPTIONS),
        answer_may_hold_pipe=True,
        lifetime=None,
        expected_solve_seconds=8.0,
        parse_answer=parse_image_answer,
    )


BASE64 = _image_kind("base64", "body")
POST = _image_kind("post", "file")


def parse_grid_cells(raw: str) -> ParsedAnswer:
    """CaptchaAI's grid answer: a JSON array of the cells to click, e.g. ``[1, 4, 7]``."""
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return ParsedAnswer({"type": "text", "text": raw}, fits=False)
    if not isinstance(document, list) or not all(
        isinstance(cell, int) and not isinstance(cell, bool) and cell >= 0 for cell in document
    ):
        return ParsedAnswer({"type": "text", "text": raw}, fits=False)
    return ParsedAnswer({"type": "grid", "cells": document})
