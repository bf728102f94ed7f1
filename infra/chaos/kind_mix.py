"""The kinds a chaos run submits, in stated proportions, and its figures per kind.

The mix (of every 20 tasks): reCAPTCHA 6, Turnstile 2, hCaptcha 1, image text 4, grid 1,
coordinates 1, GeeTest v3 1, GeeTest v4 1, Cloudflare challenge 1, BLS 2.

Why: CaptchaAI's bulk is image OCR, but images solve in seconds and their answers have no
lifetime; token kinds carry the freshness risk (a lost pingback must be recovered within 120 s),
so browser tokens stay the larger share (9 of 20, reCAPTCHA the most used). Images and grids
(6 of 20) carry the odd answers (spaces, Cyrillic, '/', ';', ',') through the callback's query
and res.php. GeeTest (2 of 20) is the kind whose answers hold '|' and must be polled one id per
request; Cloudflare challenges and BLS are rarer but each gets enough tasks in a CI run (300
tasks: 15 or more each) to show a loss.
"""

from __future__ import annotations

import base64
import itertools
import random
from collections.abc import Iterator, Mapping
from typing import Any

SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://www.google.com/recaptcha/api2/demo"
IMAGE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(600)).decode()
PROXY = {"type": "HTTP", "uri": "login:password@127.0.0.1:3128"}
USER_AGENT = "Mozilla/5.0"
BLS_CELLS = {f"image_base64_{n}": IMAGE for n in range(1, 10)}
# (name, tasks of every 20, the POST /tasks document)
KIND_MIX: tuple[tuple[str, int, Mapping[str, Any]], ...] = (
    ("recaptcha", 6, {"method": "userrecaptcha", "sitekey": SITEKEY, "page_url": PAGE_URL}),
    ("turnstile", 2, {"method": "turnstile", "sitekey": "0x4AAAAAAAC3DHQFL", "url": PAGE_URL}),
    ("hcaptcha", 1, {"method": "hcaptcha", "sitekey": "a5f74b19-9e45-40e0", "url": PAGE_URL}),
    ("image", 4, {"method": "base64", "body": IMAGE, "phrase": 1}),
    ("grid", 1, {"method": "base64", "body": IMAGE, "recaptcha": 1, "rows": 3, "cols": 3}),
    ("coordinates", 1, {"method": "post", "file": IMAGE, "coordinatescaptcha": 1}),
    (
        "geetest",
        1,
        {"method": "geetest", "gt": "f1ab2cdefa3456", "challenge": "12345678abc9", "url": PAGE_URL},
    ),
    (
        "geetest_v4",
        1,
        {"method": "geetest", "version": 4, "captcha_id": "e392e1d7fd42", "url": PAGE_URL},
    ),
    (
        "cloudflare_challenge",
        1,
        {
            "method": "cloudflare_challenge",
            "url": PAGE_URL,
            "userAgent": "Mozilla/5.0",
            "proxy": PROXY,
        },
    ),
    (
        "bls",
        2,
        {
            "method": "bls",
            "instructions": "664",
            **{f"image_base64_{n}": IMAGE for n in range(1, 10)},
        },
    ),
)
# The simulator's task knows its in.php method; the figures group by the stack's kinds.
KIND_OF_METHOD = {
    "userrecaptcha": "recaptcha",
    "hcaptcha": "hcaptcha",
    "turnstile": "turnstile",
    "base64": "image",
    "post": "image",
    "geetest": "geetest",
    "cloudflare_challenge": "cloudflare_challenge",
    "bls": "bls",
}


def documents() -> Iterator[Mapping[str, Any]]:
    """The submit documents in the mix's proportions, interleaved (every 20 tasks hold the mix)."""
    slots = [document for _, share, document in KIND_MIX for _ in range(share)]
    random.Random(20).shuffle(slots)
    return itertools.cycle(slots)
