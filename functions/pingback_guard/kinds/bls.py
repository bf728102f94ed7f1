"""BLS image grids: method ``bls``, ``instructions`` and up to nine cells ``image_base64_1`` ..
``image_base64_9`` (data URIs or plain base64; secrets of the submit). CaptchaAI's SDK sends all
nine as ``data:image/png;base64,...`` and ``instructions`` as the task's words (captchaai 1.0.1,
helpers/image.py; client.py ``bls``), a numeric code as older clients do is text too.
The answer is a JSON array of the matching cells' indices (1-9), e.g. ``[1, 4, 7]``."""

from __future__ import annotations

import json
from collections.abc import Mapping

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind, ParsedAnswer

CELLS = 9


def parse_bls_answer(raw: str, _request: Mapping[str, str]) -> ParsedAnswer:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return ParsedAnswer({"text": raw}, fits=False)
    if not isinstance(document, list) or not all(
        isinstance(cell, int) and not isinstance(cell, bool) and 1 <= cell <= CELLS
        for cell in document
    ):
        return ParsedAnswer({"text": raw}, fits=False)
    return ParsedAnswer({"cells": document})


def _cell(index: int) -> f.Field:
    cell = f.image(f"image_base64_{index}")
    return cell if index == 1 else cell.optional()


KIND = Kind(
    name="bls",
    methods=frozenset({"bls"}),
    fields=(
        f.text("instructions", 1024).needed(),
        *(_cell(index) for index in range(1, CELLS + 1)),
        f.SOFT_ID,
    ),
    answer_may_hold_pipe=False,
    lifetime=None,
    expected_solve_seconds=6.0,
    parse_answer=parse_bls_answer,
)
