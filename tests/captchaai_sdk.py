"""CaptchaAI's published SDK (``captchaai`` 1.0.1) as the tests drive it: one call per type it
offers, the answer each type's registry row says it parses, and a faster clock for the sleeps of
its client module (initial waits of 1-15 s, polls every 5 s, busy retries about 8 s apart), so its
waits shrink and its own logic (how many polls, how long to keep retrying) is unchanged."""

from __future__ import annotations

import json
import time
import types
from collections.abc import Callable

import captchaai.client
import pytest
from captchaai import CaptchaAI
from captchaai.core.registry import get_entry
from captchaai.core.result import SolveResult

PAGE = "https://shop.example/login"
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PROXY = {"proxy": "login:secret@127.0.0.1:3128", "proxytype": "HTTP"}
PADDING = b"\x00" * 128
PICTURE = bytes(range(256)) * 2
# SDK type name -> its call; each type's registry row says where its answer is and whether a user
# agent comes with it: the test reads it, never restates it.
SDK_CALLS: dict[str, Callable[[CaptchaAI], SolveResult]] = {
    "normal": lambda sdk: sdk.normal("SIMTEXT:Ёлка 42".encode() + PADDING, phrase=1, lang="ru"),
    "grid": lambda sdk: sdk.grid(PICTURE, "crosswalks", "4x4"),
    "bls": lambda sdk: sdk.bls([bytes([cell]) * 128 for cell in range(9)], "1234"),
    "recaptcha_v2": lambda sdk: sdk.recaptcha_v2(SITEKEY, PAGE),
    "recaptcha_v2_invisible": lambda sdk: sdk.recaptcha_v2(SITEKEY, PAGE, invisible=True),
    "recaptcha_v2_enterprise": lambda sdk: sdk.recaptcha_v2(
        SITEKEY, PAGE, enterprise=True, action="login"
    ),
    "recaptcha_v3": lambda sdk: sdk.recaptcha_v3(SITEKEY, PAGE, action="login", min_score=0.7),
    "recaptcha_v3_enterprise": lambda sdk: sdk.recaptcha_v3(
        SITEKEY, PAGE, action="login", enterprise=True
    ),
    "turnstile": lambda sdk: sdk.turnstile("0x4AAAAAAAC3DHQFLr1GavRN", PAGE),
    "cloudflare_challenge": lambda sdk: sdk.cloudflare_challenge(PAGE, **PROXY),
    "geetest": lambda sdk: sdk.geetest("f1ab2cdefa3456789012345b6c78d90e", "12345678abc", PAGE),
    "captchafox": lambda sdk: sdk.captchafox("sk_ILKWNruBBVKDOM7dZs59KHnDLEWiH", PAGE, **PROXY),
    "friendly_captcha": lambda sdk: sdk.friendly_captcha("FCMST5VUMCBOCGQ9", PAGE, version="v2"),
    "lemin": lambda sdk: sdk.lemin(
        "CROPPED_3dfdd5c_d1872b526b794d83ba3b365eb15a200b", "lemin", PAGE
    ),
}


def sdk_clock_at(monkeypatch: pytest.MonkeyPatch, speed: float) -> Callable[[float], None]:
    """The SDK's client module sleeps on a clock ``speed`` times faster than the real one; the
    returned call sets another speed."""

    def set_speed(sdk_seconds_per_real_second: float) -> None:
        clock = types.SimpleNamespace(
            sleep=lambda seconds: time.sleep(seconds / sdk_seconds_per_real_second)
        )
        monkeypatch.setattr(captchaai.client, "time", clock)

    set_speed(speed)
    return set_speed


def expected_solution(type_name: str, code: str) -> object:
    """The provider's answer as the SDK parses it (structured types are JSON)."""
    return json.loads(code) if get_entry(type_name).is_structured else code
