"""CaptchaAI's dialect of in.php/res.php, as its own clients speak it.

The judge is CaptchaAI's published SDK (``captchaai`` 1.0.1 on PyPI, MIT: core/registry.py,
client.py, helpers/image.py, helpers/params.py) with CaptchaAI's API docs
(https://docs.captchaai.com/api/api-error-handling). Per ``method=``:

- ``base64`` (``body``) or ``post`` (``file``): a normal image answers its text in ``request``;
  with ``grid_size`` (``3x3`` / ``4x4``) and ``instructions`` it is a grid answering a JSON list
  of the cells to click (registry row ``grid``: ``is_structured=True``).
- ``bls``: ``image_base64_1`` .. ``image_base64_9``, each a ``data:image/...;base64,`` URI (the
  SDK refuses anything but nine), plus ``instructions``; answers a JSON list of cells.
- ``userrecaptcha``: ``googlekey``, ``pageurl`` (v2, ``invisible=1``, v3 with ``version=v3``,
  ``action``, ``min_score``); with ``enterprise=1`` the token is in ``result`` beside the
  solver's ``user_agent`` (rows ``recaptcha_v2_enterprise`` / ``recaptcha_v3_enterprise``).
- ``turnstile`` (``sitekey``, ``pageurl``): a token in ``request``; ``hcaptcha`` too, the method
  CaptchaAI's migration guides map hCaptcha tasks to (https://blog.captchaai.com/migrate-nextcaptcha-to-captchaai).
- ``cloudflare_challenge``: ``pageurl`` with ``proxy`` + ``proxytype``, no site key; the
  cf_clearance value in ``result`` with ``user_agent``.
- ``geetest``: ``gt``, ``challenge``, ``pageurl``; v4 as ``version=4`` with the captcha id in ``gt``
  (https://blog.captchaai.com/captchaai-api-quick-reference-card); a JSON object in ``request``.
- ``captchafox``: ``sitekey``, ``pageurl``, proxy required; a token in ``request`` with
  ``user_agent``.
- ``friendly_captcha``: ``sitekey``, ``pageurl``, ``version`` ``v1``/``v2``; a token.
- ``lemin``: ``captcha_id``, ``div_id``, ``pageurl`` (``apiServer`` optional); a JSON object
  ``{answer, challenge_uuid}`` in ``request``.

A submit is refused with the code the SDK maps for it (orchestrator ``_SUBMIT_FATAL``):
ERROR_BAD_PARAMETERS for a missing or malformed field, ERROR_GOOGLEKEY, ERROR_PAGEURL,
ERROR_UPLOAD for a cell that is not base64, ERROR_BAD_PROXY. A full thread plan answers
ERROR_ZERO_BALANCE by default ("You don't have free threads", CaptchaAI's API docs; see plan.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from infra.simulator import codes
from infra.simulator.answers import (
    RESULT_FIELD,
    Solution,
    TokenLengths,
    answer_draw,
    cells_json,
    cf_clearance,
    friendly_captcha_token,
    geetest_answer,
    image_bytes,
    lemin_answer,
    ocr_text,
    sim_text,
    token,
    user_agent,
)
from infra.simulator.dialects import CAPTCHAAI
from infra.simulator.dialects.checks import (
    first_error,
    image_error,
    pageurl_error,
    proxy_error,
    sitekey_error,
)
from infra.simulator.plan import BUSY_ZERO_BALANCE

Params = Mapping[str, str]
GRID_CELLS: Final = {"3x3": 9, "4x4": 16}
BLS_CELLS: Final = 9
BLS_DATA_URI_PREFIX: Final = "data:image/"
FRIENDLY_CAPTCHA_VERSIONS: Final = frozenset({"v1", "v2"})
MIN_SCORE_RANGE: Final = (0.1, 0.9)


@dataclass(frozen=True)
class Kind:
    """One kind of task as CaptchaAI takes it: its submit checks and its answer."""

    check: Callable[[Params], str | None]
    solve: Callable[[random.Random, int, str, Params, TokenLengths], Solution]


def _required(params: Params, *names: str) -> str | None:
    return None if all(params.get(name) for name in names) else codes.ERROR_BAD_PARAMETERS


def _proxy_required(params: Params) -> str | None:
    return _required(params, "proxy", "proxytype")


def _is_grid(params: Params) -> bool:
    return "grid_size" in params


def _image_check(params: Params) -> str | None:
    if not _is_grid(params):
        return image_error(params)
    if params["grid_size"] not in GRID_CELLS:
        return codes.ERROR_BAD_PARAMETERS
    return first_error(_required(params, "instructions"), image_error(params))


def _image_solve(
    draw: random.Random, _seed: int, _task_id: str, params: Params, _lengths: TokenLengths
) -> Solution:
    text = sim_text(params)
    if text is not None:
        return Solution(text)
    if _is_grid(params):
        return Solution(cells_json(draw, GRID_CELLS[params["grid_size"]]))
    return Solution(ocr_text(draw))


def _bls_check(params: Params) -> str | None:
    cells = [params.get(f"image_base64_{index}", "") for index in range(1, BLS_CELLS + 1)]
    if not params.get("instructions") or not all(cells):
        return codes.ERROR_BAD_PARAMETERS
    for index, cell in enumerate(cells, start=1):
        decoded = image_bytes(params, f"image_base64_{index}")
        if not cell.startswith(BLS_DATA_URI_PREFIX) or not decoded:
            return codes.ERROR_UPLOAD
    return None


def _bls_solve(
    draw: random.Random, _seed: int, _task_id: str, _params: Params, _lengths: TokenLengths
) -> Solution:
    return Solution(cells_json(draw, BLS_CELLS))


def _token_check(params: Params) -> str | None:
    return first_error(sitekey_error(params), pageurl_error(params))


def _recaptcha_check(params: Params) -> str | None:
    return first_error(_token_check(params), _min_score_error(params))


def _min_score_error(params: Params) -> str | None:
    if "min_score" not in params:
        return None
    try:
        score = float(params["min_score"])
    except ValueError:
        return codes.ERROR_BAD_PARAMETERS
    low, high = MIN_SCORE_RANGE
    return None if low <= score <= high else codes.ERROR_BAD_PARAMETERS


def _recaptcha_solve(
    draw: random.Random, seed: int, task_id: str, params: Params, lengths: TokenLengths
) -> Solution:
    if params.get("enterprise") == "1":
        return Solution(token(seed, task_id, lengths), RESULT_FIELD, user_agent(draw))
    return Solution(token(seed, task_id, lengths))


def _token_solve(
    _draw: random.Random, seed: int, task_id: str, _params: Params, lengths: TokenLengths
) -> Solution:
    return Solution(token(seed, task_id, lengths))


def _cloudflare_check(params: Params) -> str | None:
    return first_error(pageurl_error(params), _proxy_required(params))


def _cloudflare_solve(
    draw: random.Random, _seed: int, _task_id: str, _params: Params, _lengths: TokenLengths
) -> Solution:
    return Solution(cf_clearance(draw), RESULT_FIELD, user_agent(draw))


def _geetest_check(params: Params) -> str | None:
    if params.get("version") == "4":
        return first_error(_required(params, "gt"), pageurl_error(params))
    return first_error(_required(params, "gt", "challenge"), pageurl_error(params))


def _geetest_solve(
    draw: random.Random, _seed: int, _task_id: str, params: Params, _lengths: TokenLengths
) -> Solution:
    return Solution(geetest_answer(draw, params))


def _captchafox_check(params: Params) -> str | None:
    return first_error(_token_check(params), _proxy_required(params))


def _captchafox_solve(
    draw: random.Random, seed: int, task_id: str, _params: Params, lengths: TokenLengths
) -> Solution:
    return Solution(token(seed, task_id, lengths), user_agent=user_agent(draw))


def _friendly_captcha_check(params: Params) -> str | None:
    version = params.get("version", "v1")
    version_error = None if version in FRIENDLY_CAPTCHA_VERSIONS else codes.ERROR_BAD_PARAMETERS
    return first_error(_token_check(params), version_error)


def _friendly_captcha_solve(
    draw: random.Random, _seed: int, _task_id: str, _params: Params, _lengths: TokenLengths
) -> Solution:
    return Solution(friendly_captcha_token(draw))


def _lemin_check(params: Params) -> str | None:
    return first_error(_required(params, "captcha_id", "div_id"), pageurl_error(params))


def _lemin_solve(
    draw: random.Random, _seed: int, _task_id: str, _params: Params, _lengths: TokenLengths
) -> Solution:
    return Solution(lemin_answer(draw))


KINDS: Final[Mapping[str, Kind]] = {
    "base64": Kind(_image_check, _image_solve),
    "post": Kind(_image_check, _image_solve),
    "bls": Kind(_bls_check, _bls_solve),
    "userrecaptcha": Kind(_recaptcha_check, _recaptcha_solve),
    "turnstile": Kind(_token_check, _token_solve),
    "hcaptcha": Kind(_token_check, _token_solve),
    "cloudflare_challenge": Kind(_cloudflare_check, _cloudflare_solve),
    "geetest": Kind(_geetest_check, _geetest_solve),
    "captchafox": Kind(_captchafox_check, _captchafox_solve),
    "friendly_captcha": Kind(_friendly_captcha_check, _friendly_captcha_solve),
    "lemin": Kind(_lemin_check, _lemin_solve),
}


class CaptchaAiDialect:
    name = CAPTCHAAI
    default_busy_answer = BUSY_ZERO_BALANCE
    answers_threadsinfo = True

    def submit_error(self, params: Params) -> str | None:
        kind = KINDS.get(params.get("method", ""))
        if kind is None:
            return codes.ERROR_BAD_PARAMETERS
        return first_error(kind.check(params), proxy_error(params))

    def solve(self, seed: int, task_id: str, params: Params, lengths: TokenLengths) -> Solution:
        draw = answer_draw(seed, task_id)
        return KINDS[params["method"]].solve(draw, seed, task_id, params, lengths)
