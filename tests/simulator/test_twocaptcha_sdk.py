"""The published 2captcha-python SDK (2.1.2, unmodified) against the simulator alone in 2captcha's
dialect: each of its calls for a kind the simulator solves gets the simulator's exact answer in
2captcha's shapes (grids ``click:..``, clicks ``coordinates:..``, GeeTest JSON), plus send /
get_result, balance and reports. The SDK only builds ``https://{server}/...`` URLs, so the
simulator serves HTTPS with a throwaway test CA (infra/local/apigateway/tls.py) that requests
trusts through REQUESTS_CA_BUNDLE. Its polling sleeps run on a faster clock, as in
test_simulator_captchaai_sdk.py."""

from __future__ import annotations

import base64
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import twocaptcha.solver
from twocaptcha import TwoCaptcha

# What the SDK's ApiClient raises for an ERROR_... answer (its solver has another ApiException).
from twocaptcha.exceptions.api import ApiException

from infra.local.apigateway.tls import make_test_certificates
from infra.simulator import Simulator, SimulatorConfig
from tests.simulator.simulator_helpers import FAST_CONFIG, SITEKEY

PAGE = "https://2captcha.com/demo/recaptcha-v2"
SDK_SECONDS_PER_REAL_SECOND = 100.0
PICTURE = base64.b64encode(bytes(range(256)) * 2).decode()
SDK_CALLS: dict[str, Callable[[TwoCaptcha], dict[str, Any]]] = {
    "normal": lambda sdk: sdk.normal(
        base64.b64encode(b"SIMTEXT:two words" + b"\x00" * 128).decode(), phrase=1
    ),
    "grid": lambda sdk: sdk.grid(PICTURE, hintText="cats", rows=3, cols=3),
    "coordinates": lambda sdk: sdk.coordinates(PICTURE),
    "recaptcha_v2": lambda sdk: sdk.recaptcha(SITEKEY, PAGE, invisible=1),
    "recaptcha_v3": lambda sdk: sdk.recaptcha(SITEKEY, PAGE, version="v3", action="login"),
    "recaptcha_enterprise": lambda sdk: sdk.recaptcha(SITEKEY, PAGE, enterprise=1),
    "hcaptcha": lambda sdk: sdk.hcaptcha("a5f74b19-9e45-40e0-b45d-47ff91b7a6c2", PAGE),
    "turnstile": lambda sdk: sdk.turnstile("0x4AAAAAAAC3DHQFLr1GavRN", PAGE, action="login"),
    "geetest": lambda sdk: sdk.geetest("f1ab2cdefa3456789012345b6c78d90e", "12345678abc", PAGE),
}


@pytest.fixture
def simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Simulator]:
    certificates = make_test_certificates(tmp_path / "tls")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificates.ca_bundle))
    for proxy_variable in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy_variable, raising=False)
    monkeypatch.setattr(
        twocaptcha.solver,
        "time",
        types.SimpleNamespace(
            time=time.time, sleep=lambda seconds: time.sleep(seconds / SDK_SECONDS_PER_REAL_SECOND)
        ),
    )
    config = SimulatorConfig.from_mapping({**FAST_CONFIG, "dialect": "2captcha"})
    with Simulator(config, tls=certificates.server_context()) as running:
        yield running


@pytest.fixture
def sdk(simulator: Simulator) -> TwoCaptcha:
    return TwoCaptcha(simulator.api_key, server=simulator.base_url.removeprefix("https://"))


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(task for task in simulator.tasks() if task["id"] == task_id)


@pytest.mark.parametrize("call", sorted(SDK_CALLS))
def test_every_supported_sdk_call_gets_the_simulators_exact_answer(simulator, sdk, call):
    result = SDK_CALLS[call](sdk)

    assert result["code"] == truth(simulator, result["captchaId"])["code"]


def test_answers_are_in_2captchas_shapes(simulator, sdk):
    grid = sdk.grid(PICTURE, hintText="cats", rows=3, cols=3)["code"]
    click = sdk.coordinates(PICTURE)["code"]

    assert grid.startswith("click:")
    assert click.startswith("coordinates:x=")
    with pytest.raises(ApiException, match="ERROR_BAD_PARAMETERS"):
        sdk.api_client.res(key=simulator.api_key, action="threadsinfo", json=1)


def test_send_get_result_balance_and_reports(simulator, sdk):
    task_id = sdk.send(method="turnstile", sitekey="0x4AAAAAAAC3DHQFLr1GavRN", pageurl=PAGE)
    code = sdk.wait_result(task_id, timeout=10, polling_interval=5)

    assert code == truth(simulator, task_id)["code"]
    assert sdk.balance() == simulator.config.balance
    assert sdk.report(task_id, correct=False) == "OK_REPORT_RECORDED"
    assert truth(simulator, task_id)["reports"] == ["reportbad"]
