"""2captcha's dialect of in.php/res.php (https://2captcha.com/2captcha-api), as the
2captcha-python SDK speaks it: site keys as ``googlekey``/``sitekey``, images as ``base64``
(``body``) or ``post`` (``file``) with grids as ``recaptcha=1`` answering ``click:1/4/6`` and
click CAPTCHAs as ``coordinatescaptcha=1``; every answer in ``request``; no ``threadsinfo``.
A full queue answers ERROR_NO_SLOT_AVAILABLE (2captcha's "error handling" section)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Final

from infra.simulator import codes
from infra.simulator.answers import (
    Solution,
    TokenLengths,
    answer_draw,
    cells_json,
    cf_clearance,
    click_cells,
    click_coordinates,
    geetest_answer,
    ocr_text,
    sim_text,
    token,
)
from infra.simulator.dialects import TWOCAPTCHA
from infra.simulator.dialects.checks import (
    first_error,
    image_error,
    pageurl_error,
    proxy_error,
    sitekey_error,
)
from infra.simulator.plan import BUSY_NO_SLOT

Check = Callable[[Mapping[str, str]], str | None]


def _bls_error(params: Mapping[str, str]) -> str | None:
    return None if params.get("instructions") else codes.ERROR_BAD_PARAMETERS


def _geetest_error(params: Mapping[str, str]) -> str | None:
    if not (params.get("gt") or params.get("captcha_id")):
        return codes.ERROR_BAD_PARAMETERS
    return pageurl_error(params)


def _token_error(params: Mapping[str, str]) -> str | None:
    return first_error(sitekey_error(params), pageurl_error(params))


CHECKS: Final[Mapping[str, Check]] = {
    "userrecaptcha": _token_error,
    "hcaptcha": _token_error,
    "turnstile": _token_error,
    "base64": image_error,
    "post": image_error,
    "bls": _bls_error,
    "geetest": _geetest_error,
    "cloudflare_challenge": pageurl_error,
}


class TwoCaptchaDialect:
    name = TWOCAPTCHA
    default_busy_answer = BUSY_NO_SLOT
    answers_threadsinfo = False

    def submit_error(self, params: Mapping[str, str]) -> str | None:
        check = CHECKS.get(params.get("method", ""))
        if check is None:
            return codes.ERROR_BAD_PARAMETERS
        return first_error(check(params), proxy_error(params))

    def solve(
        self, seed: int, task_id: str, params: Mapping[str, str], lengths: TokenLengths
    ) -> Solution:
        method = params["method"]
        draw = answer_draw(seed, task_id)
        if method in {"base64", "post"}:
            return Solution(_image_answer(draw, params))
        if method == "geetest":
            return Solution(geetest_answer(draw, params))
        if method == "bls":
            return Solution(cells_json(draw, 9))
        if method == "cloudflare_challenge":
            return Solution(cf_clearance(draw))
        return Solution(token(seed, task_id, lengths))


def _image_answer(draw: random.Random, params: Mapping[str, str]) -> str:
    text = sim_text(params)
    if text is not None:
        return text
    if params.get("recaptcha") == "1":
        return click_cells(draw)
    if params.get("coordinatescaptcha") == "1":
        return click_coordinates(draw)
    return ocr_text(draw)
