"""Answers of every kind, shaped like the provider's, decided at submit from the seed and the id.

Token kinds get a reCAPTCHA-like token; images get OCR text (words with spaces, Cyrillic, digits,
'/', ';', ','), a grid's ``click:1/4/6`` or ``coordinates:x=..,y=..;..``; GeeTest a JSON object
(v3's seccode ends in ``|jordan``); BLS a JSON array of cells; a Cloudflare challenge a
cf_clearance value. An image whose bytes start with ``SIMTEXT:`` is "read" as the UTF-8 text that
follows (NUL padding dropped): tests choose an image's exact answer that way.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
from collections.abc import Mapping
from typing import Final

from infra.simulator.tokens import make_token

IMAGE_METHODS: Final = frozenset({"base64", "post"})
TOKEN_METHODS: Final = frozenset({"userrecaptcha", "hcaptcha", "turnstile"})
SUPPORTED_METHODS: Final = (
    TOKEN_METHODS | IMAGE_METHODS | {"geetest", "cloudflare_challenge", "bls"}
)
SIM_TEXT_PREFIX: Final = b"SIMTEXT:"
# Solve time relative to the configured distribution (which is a token's): images and BLS cells
# are read in seconds, browser challenges in tens of seconds.
SOLVE_TIME_FACTOR: Final = {
    "base64": 0.3,
    "post": 0.3,
    "bls": 0.25,
    "geetest": 0.8,
    "cloudflare_challenge": 0.6,
}
OCR_TEXTS: Final = (
    "two words",
    "привет",
    "W68HP",
    "7d 9k",
    "a/b",
    "x;y",
    "3,14",
    "Ёлка 42",
    "zx7r",
)
HEX: Final = "0123456789abcdef"


def make_answer(
    seed: int, task_id: str, params: Mapping[str, str], min_length: int, max_length: int
) -> str:
    method = params.get("method", "")
    draw = random.Random(f"{seed}:{task_id}:answer")
    if method in IMAGE_METHODS:
        return _image_answer(draw, params)
    if method == "geetest":
        return _geetest_answer(draw, params)
    if method == "bls":
        cells = sorted(draw.sample(range(1, 10), draw.randint(1, 4)))
        return json.dumps(cells)
    if method == "cloudflare_challenge":
        issued = draw.randint(1_700_000_000, 1_800_000_000)
        return f"{_hex(draw, 40)}-{issued}-1.2.1.1-{_hex(draw, 60)}"
    return make_token(seed, task_id, min_length, max_length)


def image_bytes(params: Mapping[str, str]) -> bytes | None:
    """The submitted image: ``body`` (base64, maybe a data URI) or the uploaded ``file``."""
    encoded = params.get("body") or params.get("file") or ""
    _, _, payload = encoded.rpartition("base64,")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


def _image_answer(draw: random.Random, params: Mapping[str, str]) -> str:
    image = image_bytes(params) or b""
    if image.startswith(SIM_TEXT_PREFIX):
        return image[len(SIM_TEXT_PREFIX) :].rstrip(b"\x00").decode("utf-8", "replace")
    if params.get("recaptcha") == "1":
        cells = sorted(draw.sample(range(1, 10), draw.randint(1, 4)))
        return "click:" + "/".join(str(cell) for cell in cells)
    if params.get("coordinatescaptcha") == "1":
        points = [f"x={draw.randint(1, 300)},y={draw.randint(1, 200)}" for _ in range(2)]
        return "coordinates:" + ";".join(points)
    return draw.choice(OCR_TEXTS)


def _geetest_answer(draw: random.Random, params: Mapping[str, str]) -> str:
    if params.get("version") == "4":
        answer = {
            "captcha_id": params.get("captcha_id") or params.get("gt", ""),
            "lot_number": _hex(draw, 32),
            "pass_token": _hex(draw, 64),
            "gen_time": str(draw.randint(1_700_000_000, 1_800_000_000)),
            "captcha_output": base64.b64encode(draw.randbytes(48)).decode(),
        }
    else:
        validate = _hex(draw, 32)
        answer = {
            "challenge": params.get("challenge", ""),
            "validate": validate,
            "seccode": f"{validate}|jordan",
        }
    return json.dumps(answer, separators=(",", ":"))


def _hex(draw: random.Random, length: int) -> str:
    return "".join(draw.choice(HEX) for _ in range(length))
