"""The published 2captcha-python SDK (2.1.2, unmodified) pointed at the local stack: its README's
examples for every kind the simulator solves, send/get_result, report and balance, with every
pingback dropped, over HTTPS trusted through REQUESTS_CA_BUNDLE. The one change a worker makes:
``TwoCaptcha(key, server=<the stack's host>)`` with a per-worker key.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from twocaptcha import NetworkException, TwoCaptcha

# What the SDK's ApiClient raises for an ERROR_... answer (its solver has another ApiException).
from twocaptcha.exceptions.api import ApiException

from infra.local import LocalStack
from infra.local.aws import OTHER_WORKER, WORKER
from infra.local.up import issue_compat_key
from infra.simulator import Simulator
from tests.local.support import QUICK_SOLVES

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(600)]

SIMULATOR = {**QUICK_SOLVES, "seed": 26}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s
    "parameter_overrides": {"CallbackTimeoutSeconds": "10", "ExpectedSolveSeconds": "5"},
    "workers_per_function": 1,
}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://2captcha.com/demo/recaptcha-v2"


@pytest.fixture(scope="module")
def worker_key(stack: LocalStack) -> str:
    return issue_compat_key(stack.ready, WORKER.user_arn, "sdk test")


@pytest.fixture
def server(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> str:
    """The SDK's ``server``: the gateway's HTTPS host, its test CA trusted by requests."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", stack.ready.ca_bundle)
    return urlsplit(stack.ready.tls_api_url).netloc


@pytest.fixture
def solver(server: str, worker_key: str) -> TwoCaptcha:
    # pollingInterval 1 s instead of 10: the stack answers CAPCHA_NOT_READY, never a ban.
    return TwoCaptcha(
        worker_key, server=server, pollingInterval=1, defaultTimeout=90, recaptchaTimeout=90
    )


@pytest.fixture(autouse=True)
def every_pingback_dropped(simulator: Simulator) -> Iterator[None]:
    simulator.update_faults(pingback_drop_rate=1.0)
    yield
    simulator.update_faults(pingback_drop_rate=0.0)


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


def assert_provider_s_answer(simulator: Simulator, result: dict[str, Any]) -> None:
    task = truth(simulator, result["captchaId"])
    assert result["code"] == task["code"]
    assert task["deliveries"] == [] or all(d["outcome"] != "delivered" for d in task["deliveries"])


def test_recaptcha_v2(solver: TwoCaptcha, simulator: Simulator) -> None:
    result = solver.recaptcha(sitekey=SITEKEY, url=PAGE_URL)
    assert_provider_s_answer(simulator, result)


def test_recaptcha_v3_with_the_sdk_s_score_name(solver: TwoCaptcha, simulator: Simulator) -> None:
    result = solver.recaptcha(
        sitekey=SITEKEY, url=PAGE_URL, version="v3", action="verify", score=0.3
    )
    assert_provider_s_answer(simulator, result)


def test_hcaptcha(solver: TwoCaptcha, simulator: Simulator) -> None:
    result = solver.hcaptcha(
        sitekey="f7de0da3-3303-44e8-ab48-fa32ff8ccc7b",
        url="https://2captcha.com/demo/hcaptcha",
    )
    assert_provider_s_answer(simulator, result)


def test_turnstile(solver: TwoCaptcha, simulator: Simulator) -> None:
    result = solver.turnstile(
        sitekey="0x4AAAAAAAVrOwQWPlm3Bnr5", url="https://2captcha.com/demo/cloudflare-turnstile"
    )
    assert_provider_s_answer(simulator, result)


def test_extended_response_reads_res_php_with_json(server: str, worker_key: str) -> None:
    solver = TwoCaptcha(
        worker_key, server=server, pollingInterval=1, defaultTimeout=90, extendedResponse=True
    )
    result = solver.hcaptcha(sitekey="f7de0da3-3303-44e8-ab48-fa32ff8ccc7b", url=PAGE_URL)
    assert set(result) == {"captchaId", "code"} and result["code"]


def test_send_get_result_and_report(solver: TwoCaptcha, simulator: Simulator) -> None:
    task_id = solver.send(method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL)
    deadline = time.monotonic() + 90
    while True:
        try:
            code = solver.get_result(task_id)
            break
        except NetworkException:  # CAPCHA_NOT_READY
            assert time.monotonic() < deadline
            time.sleep(1)
    assert code == truth(simulator, task_id)["code"]
    assert solver.report(task_id, True) == "OK_REPORT_RECORDED"
    assert truth(simulator, task_id)["reports"] == ["reportgood"]
    with pytest.raises(ApiException, match="ERROR_DUPLICATE_REPORT"):
        solver.report(task_id, False)


def test_balance_is_the_provider_account_s(solver: TwoCaptcha, simulator: Simulator) -> None:
    assert solver.balance() == float(simulator.config.balance)


def test_an_unknown_or_revoked_key_gets_the_protocol_s_key_error(
    stack: LocalStack, server: str
) -> None:
    stranger = TwoCaptcha("0" * 32, server=server)
    with pytest.raises(ApiException, match="ERROR_KEY_DOES_NOT_EXIST"):
        stranger.recaptcha(sitekey=SITEKEY, url=PAGE_URL)
    with pytest.raises(ApiException, match="ERROR_WRONG_USER_KEY"):
        TwoCaptcha("not a key", server=server).balance()


def test_another_owner_s_key_never_reads_the_task(
    stack: LocalStack, solver: TwoCaptcha, server: str
) -> None:
    task_id = solver.send(method="hcaptcha", sitekey="f7de0da3", pageurl=PAGE_URL)
    other = TwoCaptcha(issue_compat_key(stack.ready, OTHER_WORKER.user_arn, "other"), server=server)
    with pytest.raises(ApiException, match="ERROR_WRONG_CAPTCHA_ID"):
        other.get_result(task_id)
