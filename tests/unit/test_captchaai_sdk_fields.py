"""Every form CaptchaAI's published SDK (``captchaai`` 1.0.1) sends to in.php is taken by the
stack's one validator, for every type it offers, and each answer it reads back parses as its kind
says. The forms are read from the installed SDK itself, offline: its transport is swapped for a
recorder (its engine, validation, image handling and field names are its own)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import captchaai.client
import pytest
from captchaai import CaptchaAI
from captchaai.core.config import Config
from captchaai.core.registry import REGISTRY
from captchaai.transport.base import UniformResponse

from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.kinds.registry import parse_answer
from pingback_guard.logic.compat_submit import CONTROL_FIELDS, parse_fields

PAGE = "https://shop.example/login"
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PROXY = {"proxy": "login:secret@127.0.0.1:3128", "proxytype": "HTTP"}
PICTURE = bytes(range(256)) * 2
UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/126.0"
SDK_CALLS: dict[str, Callable[[CaptchaAI], object]] = {
    "normal": lambda sdk: sdk.normal(
        PICTURE,
        numeric=1,
        min_len=2,
        max_len=8,
        phrase=1,
        case_sensitive=1,
        lang="en",
        instructions="red letters",
    ),
    "grid": lambda sdk: sdk.grid(PICTURE, "crosswalks", "3x3"),
    "bls": lambda sdk: sdk.bls([PICTURE] * 9, "select all cats"),
    "recaptcha_v2": lambda sdk: sdk.recaptcha_v2(SITEKEY, PAGE, cookies="a=1", user_agent=UA),
    "recaptcha_v2_invisible": lambda sdk: sdk.recaptcha_v2(SITEKEY, PAGE, invisible=True),
    "recaptcha_v2_enterprise": lambda sdk: sdk.recaptcha_v2(
        SITEKEY, PAGE, enterprise=True, action="login"
    ),
    "recaptcha_v3": lambda sdk: sdk.recaptcha_v3(SITEKEY, PAGE, action="login", min_score=0.7),
    "recaptcha_v3_enterprise": lambda sdk: sdk.recaptcha_v3(
        SITEKEY, PAGE, action="login", enterprise=True
    ),
    "turnstile": lambda sdk: sdk.turnstile("0x4AAAAAAAC3DHQFLr1GavRN", PAGE, user_agent=UA),
    "cloudflare_challenge": lambda sdk: sdk.cloudflare_challenge(PAGE, cookies="a=1", **PROXY),
    "geetest": lambda sdk: sdk.geetest("f1ab2cdefa3456789012345b6c78d90e", "12345678abc", PAGE),
    "captchafox": lambda sdk: sdk.captchafox("sk_ILKWNruBBVKDOM7dZs59KHnDLEWiH", PAGE, **PROXY),
    "friendly_captcha": lambda sdk: sdk.friendly_captcha("FCMST5VUMCBOCGQ9", PAGE, version="v2"),
    "lemin": lambda sdk: sdk.lemin(
        "CROPPED_3dfdd5c_d1872b526b794d83ba3b365eb15a200b", "lemin", PAGE, api_server="api.lemin"
    ),
}
# What the provider answers for each type (CaptchaAI's shapes: core/registry.py), and the fields
# the stack parses from it for the worker.
ANSWERS: dict[str, tuple[str, dict[str, Any]]] = {
    "grid": ("[1,5,9]", {"type": "grid", "cells": [1, 5, 9]}),
    "bls": ("[2,4]", {"cells": [2, 4]}),
    "lemin": (
        '{"answer":"0xaxcgx0xa","challenge_uuid":"9f1c"}',
        {"answer": "0xaxcgx0xa", "challenge_uuid": "9f1c"},
    ),
    "friendly_captcha": ("c2lnbmF0dXJl.cHV6+emxl/.c29sdXRpb24=.AgAB", {}),
}


class RecordingTransport:
    """The SDK's transport, answering in.php with a task id; keeps each in.php form."""

    def __init__(self) -> None:
        self.forms: list[dict[str, Any]] = []

    def request_raw(self, method: str, url: str, data: dict[str, Any]) -> UniformResponse:
        if url.endswith("/in.php"):
            self.forms.append(dict(data))
            return UniformResponse(200, {"status": 1, "request": "4242"})
        answer = {"status": 1, "request": "{}", "result": "{}", "user_agent": UA}
        return UniformResponse(200, answer)

    def close(self) -> None:
        return None


def sdk_form(type_name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setattr(captchaai.client.time, "sleep", lambda _seconds: None)
    sdk = CaptchaAI.__new__(CaptchaAI)  # no constructor: its threadsinfo is the recorder's
    sdk._config = Config(api_key="k" * 32)
    recorder = RecordingTransport()
    sdk._transport = recorder
    SDK_CALLS[type_name](sdk)
    (form,) = recorder.forms
    return {name: str(value) for name, value in form.items()}


def test_every_type_the_sdk_offers_is_checked_here() -> None:
    assert set(REGISTRY) == set(SDK_CALLS)


@pytest.mark.parametrize("type_name", sorted(SDK_CALLS))
def test_every_field_the_sdk_sends_is_taken(
    type_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    form = sdk_form(type_name, monkeypatch)
    request = parse_fields({k: v for k, v in form.items() if k not in CONTROL_FIELDS})
    sent = {name for name in form if name not in CONTROL_FIELDS | {"method"}}
    assert set(request.fields) == sent


@pytest.mark.parametrize("type_name", sorted(ANSWERS))
def test_each_structured_answer_parses_as_its_kind_says(
    type_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    form = sdk_form(type_name, monkeypatch)
    request: CaptchaRequest = parse_fields(
        {k: v for k, v in form.items() if k not in CONTROL_FIELDS}
    )
    raw, fields = ANSWERS[type_name]
    parsed = parse_answer(request, raw)
    assert parsed.fits
    assert parsed.fields == (fields or {"token": raw})
