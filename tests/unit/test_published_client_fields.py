"""Every field a published 2captcha client sends for a kind the stack solves is taken, under each
spelling it uses, and reaches the provider under the name in.php documents.

2captcha-python's forms are read from the installed SDK itself (its ApiClient swapped for a
recorder, so a new SDK version is what is checked); @2captcha/captcha-solver 1.3.9's and
CaptchaAI's documented forms are written out from their published source and documentation.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
from twocaptcha import TwoCaptcha

from pingback_guard.kinds.registry import InvalidFieldError, parse_provider_fields
from pingback_guard.logic.compat_submit import CONTROL_FIELDS, parse_fields
from tests.twocaptcha_sdk import RecordingApiClient

PAGE = "https://example.test/login"
UA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/114.0.0.0"
PROXY = {"type": "HTTPS", "uri": "login:password@192.0.2.10:3128"}
PICTURE = b"\x89PNG" + b"\x00" * 400
IMAGE = base64.b64encode(PICTURE).decode()
# The spellings in.php documents for the ones clients send.
DOCUMENTED = {"useragent": "userAgent", "datas": "data-s"}


def sdk_form(call: Callable[[TwoCaptcha], object]) -> dict[str, str]:
    solver = TwoCaptcha("k" * 32, pollingInterval=0)
    recorder = RecordingApiClient()
    solver.api_client = recorder
    call(solver)
    (form,) = recorder.forms
    return form


def picture(tmp_path: Path) -> str:
    path = tmp_path / "captcha.png"
    path.write_bytes(PICTURE)
    return str(path)


# Each SDK method of a kind the stack solves, with every option its docstring names.
SDK_CALLS: dict[str, Callable[[TwoCaptcha, str], object]] = {
    "normal": lambda s, p: s.normal(
        p,
        numeric=4,
        minLen=1,
        maxLen=20,
        phrase=0,
        caseSensitive=1,
        calc=0,
        lang="en",
        hintText="type the red symbols",
        hintImg=p,
    ),
    "recaptcha_v2": lambda s, p: s.recaptcha(
        sitekey="6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
        url=PAGE,
        invisible=1,
        domain="recaptcha.net",
        datas="token-s",
        cookies="a=b",
        userAgent=UA,
        proxy=PROXY,
    ),
    "recaptcha_v3": lambda s, p: s.recaptcha(
        sitekey="6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
        url=PAGE,
        version="v3",
        enterprise=1,
        action="verify",
        score=0.3,
    ),
    "geetest": lambda s, p: s.geetest(
        gt="f1ab2cdefa3456789012345b6c78d90e",
        challenge="12345678abc90123d45678ef90123a456b",
        url=PAGE,
        offline=1,
        new_captcha=1,
        userAgent=UA,
        apiServer="api-na.geetest.com",
        proxy=PROXY,
    ),
    "geetest_v4": lambda s, p: s.geetest_v4(
        captcha_id="e392e1d7fd421dc63325744d5a2b9c73", url=PAGE, proxy=PROXY
    ),
    "hcaptcha": lambda s, p: s.hcaptcha(
        sitekey="f7de0da3-3303-44e8-ab48-fa32ff8ccc7b",
        url=PAGE,
        invisible=1,
        data="rqdata",
        domain="js.hcaptcha.com",
        proxy=PROXY,
    ),
    "turnstile": lambda s, p: s.turnstile(
        sitekey="0x1AAAAAAAAkg0s2VIOD34y5",
        url=PAGE,
        data="foo",
        pagedata="bar",
        action="challenge",
        useragent=UA,
        proxy=PROXY,
    ),
    "grid": lambda s, p: s.grid(
        p,
        hintText="Select all images with stairs",
        rows=3,
        cols=3,
        img_type="recaptcha",
        previousId="4241",
        canSkip=1,
        lang="en",
    ),
    "canvas": lambda s, p: s.canvas(p, hintText="Draw around the apple", canSkip=1, lang="en"),
    "coordinates": lambda s, p: s.coordinates(
        p, hintText="Select all the birds", lang="en", min_clicks=1, max_clicks=3
    ),
}


def as_compat_submit_reads_it(form: dict[str, str]) -> dict[str, str]:
    """What in.php's logic parses: the form without the protocol's own fields."""
    return {name: value for name, value in form.items() if name not in CONTROL_FIELDS}


def assert_every_field_reaches_the_provider(form: dict[str, str]) -> None:
    fields = as_compat_submit_reads_it(form)
    request = parse_fields(fields)
    for name, value in fields.items():
        if name == "method":
            continue
        if form["method"] == "geetest_v4" and name == "version":
            continue
        assert request.fields[DOCUMENTED.get(name, name)] == value


@pytest.mark.parametrize("example", sorted(SDK_CALLS))
def test_every_field_the_python_sdk_sends_is_taken(example: str, tmp_path: Path) -> None:
    form = sdk_form(lambda solver: SDK_CALLS[example](solver, picture(tmp_path)))
    assert_every_field_reaches_the_provider(form)


def test_the_sdk_s_turnstile_user_agent_is_sent_as_in_php_spells_it(tmp_path: Path) -> None:
    form = sdk_form(lambda solver: SDK_CALLS["turnstile"](solver, picture(tmp_path)))
    assert form["useragent"] == UA and "userAgent" not in form
    assert parse_fields(as_compat_submit_reads_it(form)).fields["userAgent"] == UA


# @2captcha/captcha-solver 1.3.9 (dist/structs/2captcha.js): defaultPayload (key, json=1,
# header_acao, soft_id=4587) with each method's params; grid/canvas/coordinates go as JSON.
JS_DEFAULTS = {"key": "k" * 32, "json": "1", "header_acao": "0", "soft_id": "4587"}
JS_FORMS: dict[str, dict[str, str]] = {
    "recaptcha": {
        "method": "userrecaptcha",
        "googlekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
        "pageurl": PAGE,
        "cookies": "a=b",
        "proxy": PROXY["uri"],
        "proxytype": "HTTPS",
        "userAgent": UA,
        "invisible": "1",
        "datas": "token-s",
        "action": "verify",
        "enterprise": "0",
        "min_score": "0.3",
        "version": "v3",
        "domain": "google.com",
    },
    "hcaptcha": {
        "method": "hcaptcha",
        "sitekey": "f7de0da3-3303",
        "pageurl": PAGE,
        "data": "rq",
        "userAgent": UA,
        "invisible": "1",
        "proxy": PROXY["uri"],
        "proxytype": "HTTPS",
        "domain": "js.hcaptcha.com",
    },
    "geetest": {
        "method": "geetest",
        "gt": "f1ab2cdefa3456",
        "challenge": "12345678abc90123d4",
        "api_server": "api.geetest.com",
        "offline": "1",
        "new_captcha": "1",
        "pageurl": PAGE,
        "proxy": PROXY["uri"],
        "proxytype": "HTTPS",
        "userAgent": UA,
    },
    "geetestV4": {
        "method": "geetest_v4",
        "captcha_id": "e392e1d7fd421dc6",
        "risk_type": "slide",
        "pageurl": PAGE,
        "proxy": PROXY["uri"],
        "proxytype": "HTTPS",
        "userAgent": UA,
    },
    "cloudflareTurnstile": {
        "method": "turnstile",
        "pageurl": PAGE,
        "sitekey": "0x1AAAAAAAAkg0s2VIOD34y5",
        "action": "challenge",
        "data": "foo",
        "proxy": PROXY["uri"],
        "proxytype": "HTTPS",
    },
    "imageCaptcha": {
        "method": "base64",
        "body": IMAGE,
        "phrase": "0",
        "regsense": "1",
        "numeric": "4",
        "calc": "0",
        "min_len": "5",
        "max_len": "5",
        "language": "2",
        "lang": "en",
        "textinstructions": "type the red symbols",
    },
    "coordinates": {
        "method": "base64",
        "coordinatescaptcha": "1",
        "body": IMAGE,
        "imginstructions": IMAGE,
        "textinstructions": "click the boat",
        "language": "2",
        "lang": "en",
    },
    "grid": {
        "method": "base64",
        "recaptcha": "1",
        "body": IMAGE,
        "textinstructions": "cars",
        "imginstructions": IMAGE,
        "recaptcharows": "3",
        "recaptchacols": "3",
        "min_clicks": "1",
        "max_clicks": "4",
        "img_type": "recaptcha",
        "previousID": "4241",
        "can_no_answer": "1",
        "lang": "en",
    },
    "canvas": {
        "method": "base64",
        "recaptcha": "1",
        "canvas": "1",
        "body": IMAGE,
        "textinstructions": "Draw around the apple",
        "can_no_answer": "1",
        "lang": "en",
    },
}
# CaptchaAI's documented in.php examples (docs.captchaai.com/api/turnstile and the kind pages):
# the fields each sends, json=0 included.
CAPTCHAAI_FORMS: dict[str, dict[str, str]] = {
    "turnstile": {
        "key": "k" * 32,
        "method": "turnstile",
        "sitekey": "0x4AAAAAAAVrOwQWPlm3Bnr5",
        "pageurl": PAGE,
        "action": "login",
        "proxy": PROXY["uri"],
        "proxytype": "HTTP",
        "json": "0",
    },
    "recaptcha_v2": {
        "key": "k" * 32,
        "method": "userrecaptcha",
        "googlekey": "6Le-wvkSAAAAAPBMRTvw0Q4",
        "pageurl": PAGE,
        "json": "1",
    },
}


@pytest.mark.parametrize("example", sorted(JS_FORMS))
def test_every_field_the_javascript_client_sends_is_taken(example: str) -> None:
    assert_every_field_reaches_the_provider({**JS_DEFAULTS, **JS_FORMS[example]})


@pytest.mark.parametrize("example", sorted(CAPTCHAAI_FORMS))
def test_every_field_of_captchaai_s_documented_examples_is_taken(example: str) -> None:
    assert_every_field_reaches_the_provider(CAPTCHAAI_FORMS[example])


@pytest.mark.parametrize(
    ("method", "form"),
    [
        ("turnstile", {"sitekey": "0x4", "pageurl": PAGE}),
        ("hcaptcha", {"sitekey": "f7de0da3", "pageurl": PAGE}),
        ("userrecaptcha", {"googlekey": "6Le", "pageurl": PAGE}),
        ("geetest", {"gt": "f1ab", "challenge": "1234", "pageurl": PAGE}),
        ("cloudflare_challenge", {"pageurl": PAGE, "proxy": "1.2.3.4:80", "proxytype": "HTTP"}),
    ],
)
def test_either_user_agent_spelling_is_the_user_agent(method: str, form: dict[str, str]) -> None:
    for spelling in ("useragent", "userAgent"):
        request = parse_provider_fields({"method": method, **form, spelling: UA})
        assert request.fields["userAgent"] == UA and "useragent" not in request.fields


def test_one_field_under_two_spellings_with_two_values_is_refused() -> None:
    form = {"method": "turnstile", "sitekey": "0x4", "pageurl": PAGE}
    same = parse_provider_fields({**form, "useragent": UA, "userAgent": UA})
    assert same.fields["userAgent"] == UA
    with pytest.raises(InvalidFieldError, match="userAgent is given twice"):
        parse_provider_fields({**form, "useragent": UA, "userAgent": "other"})


def test_datas_is_recaptcha_s_data_s() -> None:
    request = parse_provider_fields(
        {"method": "userrecaptcha", "googlekey": "6Le", "pageurl": PAGE, "datas": "s-value"}
    )
    assert request.fields == {"googlekey": "6Le", "pageurl": PAGE, "data-s": "s-value"}


def test_a_file_sent_without_a_method_is_a_normal_captcha(tmp_path: Path) -> None:
    # 2captcha-python's README: solver.send(file='path/to/captcha.jpg') names no method.
    form = sdk_form(lambda solver: solver.send(file=picture(tmp_path)))
    assert "method" not in form
    assert parse_fields(as_compat_submit_reads_it(form)).method == "post"
