"""The kinds a chaos run submits, in stated proportions, and its figures per kind.

The mix (of every 20 tasks): reCAPTCHA 4, reCAPTCHA Enterprise 1, Turnstile 2, hCaptcha 1,
image text 3, grid 1, coordinates 1, GeeTest v3 1, GeeTest v4 1, Cloudflare challenge 1, BLS 1,
CaptchaFox 1, Friendly Captcha 1, Lemin 1.

Why: CaptchaAI's bulk is image OCR, but images solve in seconds and their answers have no
lifetime; token kinds carry the freshness risk (a lost pingback must be recovered within 120 s),
so browser tokens stay the larger share (reCAPTCHA the most used). Images and grids (5 of 20)
carry the odd answers (spaces, Cyrillic, JSON cell lists) through the callback's query and
res.php. GeeTest (2 of 20) is the kind whose answers hold '|' and must be polled one id per
request; Enterprise, Cloudflare challenges and CaptchaFox answer with the solver's user agent
(CaptchaAI sends Enterprise's and Cloudflare's in ``result``), Lemin a JSON object: each of the
rarer kinds gets enough tasks in a CI run (300 tasks: 15 each) to show a loss.
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
# The provider is CaptchaAI (the simulator's default dialect): its spellings, as its SDK sends
# them (captchaai 1.0.1 core/registry.py): BLS cells as data URIs, GeeTest v4's id as ``gt``.
BLS_CELLS = {f"image_base64_{n}": f"data:image/png;base64,{IMAGE}" for n in range(1, 10)}
# (name, tasks of every 20, the POST /tasks document)
KIND_MIX: tuple[tuple[str, int, Mapping[str, Any]], ...] = (
    ("recaptcha", 4, {"method": "userrecaptcha", "sitekey": SITEKEY, "page_url": PAGE_URL}),
    (
        "recaptcha_enterprise",
        1,
        {"method": "userrecaptcha", "sitekey": SITEKEY, "page_url": PAGE_URL, "enterprise": 1},
    ),
    ("turnstile", 2, {"method": "turnstile", "sitekey": "0x4AAAAAAAC3DHQFL", "url": PAGE_URL}),
    ("hcaptcha", 1, {"method": "hcaptcha", "sitekey": "a5f74b19-9e45-40e0", "url": PAGE_URL}),
    ("image", 3, {"method": "base64", "body": IMAGE, "phrase": 1}),
    (
        "grid",
        1,
        {"method": "base64", "body": IMAGE, "instructions": "crosswalks", "grid_size": "3x3"},
    ),
    ("coordinates", 1, {"method": "post", "file": IMAGE, "coordinatescaptcha": 1}),
    (
        "geetest",
        1,
        {"method": "geetest", "gt": "f1ab2cdefa3456", "challenge": "12345678abc9", "url": PAGE_URL},
    ),
    (
        "geetest_v4",
        1,
        {"method": "geetest", "version": 4, "gt": "e392e1d7fd42", "url": PAGE_URL},
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
        1,
        {
            "method": "bls",
            "instructions": "664",
            **BLS_CELLS,
        },
    ),
    (
        "captchafox",
        1,
        {
            "method": "captchafox",
            "sitekey": "sk_ILKWNruBBVKDOM7dZs",
            "url": PAGE_URL,
            "proxy": PROXY,
        },
    ),
    (
        "friendly_captcha",
        1,
        {
            "method": "friendly_captcha",
            "sitekey": "FCMST5VUMCBOCGQ9",
            "url": PAGE_URL,
            "version": "v2",
        },
    ),
    (
        "lemin",
        1,
        {
            "method": "lemin",
            "captcha_id": "CROPPED_3dfdd5c_d1872b526b794d83ba3b365eb15a200b",
            "div_id": "lemin-cropped-captcha",
            "url": PAGE_URL,
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
    "captchafox": "captchafox",
    "friendly_captcha": "friendly_captcha",
    "lemin": "lemin",
}


def documents() -> Iterator[Mapping[str, Any]]:
    """The submit documents in the mix's proportions, interleaved (every 20 tasks hold the mix)."""
    slots = [document for _, share, document in KIND_MIX for _ in range(share)]
    random.Random(20).shuffle(slots)
    return itertools.cycle(slots)
