"""Answers of every kind, shaped like the providers', decided at submit from the seed and the id.

The generators here are shared; each dialect (infra/simulator/dialects) picks which one answers
which submit and where res.php puts it. Token kinds get a reCAPTCHA-like token; images get OCR
text (words with spaces, Cyrillic, digits, '/', ';', ','), 2captcha's grids ``click:1/4/6`` or
``coordinates:x=..,y=..;..``, CaptchaAI's grids and BLS a JSON array of cells; GeeTest a JSON
object (v3's seccode ends in ``|jordan``); a Cloudflare challenge a cf_clearance value; Lemin a
JSON object. An image whose bytes start with ``SIMTEXT:`` is "read" as the UTF-8 text that
follows (NUL padding dropped): tests choose an image's exact answer that way.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from infra.simulator.tokens import make_token

SIM_TEXT_PREFIX: Final = b"SIMTEXT:"
# Solve time relative to the configured distribution (which is a token's): images and BLS cells
# are read in seconds, browser challenges in tens of seconds. CaptchaAI's SDK (1.0.1,
# core/registry.py) orders them the same way by its first poll: 1 s for images, 10 s for v3,
# Turnstile, CaptchaFox, Friendly Captcha and Lemin, 15 s for v2, GeeTest, Cloudflare Challenge.
SOLVE_TIME_FACTOR: Final = {
    "base64": 0.3,
    "post": 0.3,
    "bls": 0.25,
    "geetest": 0.8,
    "cloudflare_challenge": 0.6,
    "captchafox": 0.6,
    "friendly_captcha": 0.5,
    "lemin": 0.6,
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
CHROME_MAJOR_VERSIONS: Final = (128, 129, 130, 131, 132, 133)
REQUEST_FIELD: Final = "request"
RESULT_FIELD: Final = "result"


@dataclass(frozen=True)
class TokenLengths:
    minimum: int
    maximum: int


@dataclass(frozen=True)
class Solution:
    """What res.php answers for a solved task: the text, the JSON field that holds it
    (``request`` or CaptchaAI's ``result``), and the solver's user agent where the token is
    bound to it."""

    text: str
    field: str = REQUEST_FIELD
    user_agent: str | None = None


def answer_draw(seed: int, task_id: str) -> random.Random:
    """The task's own answer randomness (a string seed hashes the same in every process)."""
    return random.Random(f"{seed}:{task_id}:answer")


def token(seed: int, task_id: str, lengths: TokenLengths) -> str:
    return make_token(seed, task_id, lengths.minimum, lengths.maximum)


def image_bytes(params: Mapping[str, str], field: str | None = None) -> bytes | None:
    """The submitted image: ``field``, else ``body`` (base64, maybe a data URI) or the uploaded
    ``file``; None when it is not base64."""
    encoded = params.get(field, "") if field else params.get("body") or params.get("file") or ""
    _, _, payload = encoded.rpartition("base64,")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


def sim_text(params: Mapping[str, str]) -> str | None:
    """The text a ``SIMTEXT:`` image asks to be read as, or None for any other image."""
    image = image_bytes(params) or b""
    if not image.startswith(SIM_TEXT_PREFIX):
        return None
    return image[len(SIM_TEXT_PREFIX) :].rstrip(b"\x00").decode("utf-8", "replace")


def ocr_text(draw: random.Random) -> str:
    return draw.choice(OCR_TEXTS)


def cells(draw: random.Random, count: int) -> list[int]:
    """Between one and four distinct cells of a grid of `count`, ascending, numbered from 1."""
    return sorted(draw.sample(range(1, count + 1), draw.randint(1, 4)))


def cells_json(draw: random.Random, count: int) -> str:
    return json.dumps(cells(draw, count))


def click_cells(draw: random.Random) -> str:
    return "click:" + "/".join(str(cell) for cell in cells(draw, 9))


def click_coordinates(draw: random.Random) -> str:
    points = [f"x={draw.randint(1, 300)},y={draw.randint(1, 200)}" for _ in range(2)]
    return "coordinates:" + ";".join(points)


def geetest_answer(draw: random.Random, params: Mapping[str, str]) -> str:
    if params.get("version") == "4":
        answer = {
            "captcha_id": params.get("captcha_id") or params.get("gt", ""),
            "lot_number": hex_text(draw, 32),
            "pass_token": hex_text(draw, 64),
            "gen_time": str(draw.randint(1_700_000_000, 1_800_000_000)),
            "captcha_output": base64.b64encode(draw.randbytes(48)).decode(),
        }
    else:
        validate = hex_text(draw, 32)
        answer = {
            "challenge": params.get("challenge", ""),
            "validate": validate,
            "seccode": f"{validate}|jordan",
        }
    return compact_json(answer)


def cf_clearance(draw: random.Random) -> str:
    issued = draw.randint(1_700_000_000, 1_800_000_000)
    return f"{hex_text(draw, 40)}-{issued}-1.2.1.1-{hex_text(draw, 60)}"


def lemin_answer(draw: random.Random) -> str:
    """Lemin's answer pair (CaptchaAI SDK 1.0.1, client.py ``lemin``: ``{answer,
    challenge_uuid}``); the answer is Lemin's ``0x..x`` encoding (help.leminnow.com)."""
    answer = "".join(f"0x{hex_text(draw, 2)}x" for _ in range(draw.randint(8, 16)))
    return compact_json(
        {"answer": answer, "challenge_uuid": str(uuid.UUID(int=draw.getrandbits(128), version=4))}
    )


def friendly_captcha_token(draw: random.Random) -> str:
    """A Friendly Captcha solution: dot-separated signature, puzzle, solutions, diagnostics."""
    parts = (hex_text(draw, 32), base64.b64encode(draw.randbytes(96)).decode())
    tail = (base64.b64encode(draw.randbytes(48)).decode(), base64.b64encode(b"\x01\x02").decode())
    return ".".join((*parts, *tail))


def user_agent(draw: random.Random) -> str:
    """The solver's browser, which a token bound to it must be used with."""
    major = draw.choice(CHROME_MAJOR_VERSIONS)
    return (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{major}.0.0.0 Safari/537.36"
    )


def hex_text(draw: random.Random, length: int) -> str:
    return "".join(draw.choice(HEX) for _ in range(length))


def compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))
