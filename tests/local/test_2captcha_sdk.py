"""The published 2captcha-python SDK (2.1.2, unmodified) pointed at the local stack: its README's
examples for every kind the simulator solves, send/get_result, report and balance, with every
pingback dropped, over HTTPS trusted through REQUESTS_CA_BUNDLE. The one change a worker makes:
``TwoCaptcha(key, server=<the stack's host>)`` with a per-worker key.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from twocaptcha import NetworkException, TwoCaptcha

# What the SDK's ApiClient raises for an ERROR_... answer (its solver has another ApiException).
from twocaptcha.exceptions.api import ApiException

from infra.local import LocalStack
from infra.local.runtime.aws import OTHER_WORKER, WORKER
from infra.local.up import issue_compat_key
from infra.simulator import Simulator
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(600)]

SIMULATOR = {**QUICK_SOLVES, "seed": 26}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s
    "parameter_overrides": {
        "CallbackTimeoutSeconds": "10",
        "ExpectedSolveSeconds": "5",
        "AllowLoopbackPingbacks": "true",  # the test's pingback receiver is on 127.0.0.1
    },
    "workers_per_function": 1,
}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://2captcha.com/demo/recaptcha-v2"
PADDING = b"\x00" * 128


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


def image_file(tmp_path: Path, text: str) -> str:
    """A picture the simulator reads as ``text`` (its SIMTEXT convention; the padding makes it
    as large as the smallest image the stack takes)."""
    path = tmp_path / "captcha.png"
    path.write_bytes(b"SIMTEXT:" + text.encode() + PADDING)
    return str(path)


def test_normal_uploads_the_file(solver: TwoCaptcha, simulator: Simulator, tmp_path: Path) -> None:
    result = solver.normal(image_file(tmp_path, "Ёлка 42"), numeric=4, minLen=4, maxLen=20)
    assert_provider_s_answer(simulator, result)
    assert result["code"] == "Ёлка 42"


def test_normal_as_base64(solver: TwoCaptcha, simulator: Simulator) -> None:
    picture = base64.b64encode(b"SIMTEXT:7d 9k" + PADDING).decode()
    result = solver.normal(picture, caseSensitive=1)
    assert_provider_s_answer(simulator, result)


def test_grid(solver: TwoCaptcha, simulator: Simulator, tmp_path: Path) -> None:
    path = tmp_path / "grid.png"
    path.write_bytes(b"\x89PNG grid" + PADDING)
    result = solver.grid(str(path), rows=3, cols=3, hintText="Select all images with stairs")
    assert_provider_s_answer(simulator, result)
    assert result["code"].startswith("click:")


def test_coordinates(solver: TwoCaptcha, simulator: Simulator, tmp_path: Path) -> None:
    path = tmp_path / "coordinates.png"
    path.write_bytes(b"\x89PNG coordinates" + PADDING)
    result = solver.coordinates(str(path), hintText="Select all the birds")
    assert_provider_s_answer(simulator, result)
    assert result["code"].startswith("coordinates:")


def test_geetest(solver: TwoCaptcha, simulator: Simulator) -> None:
    result = solver.geetest(
        gt="f3bf6dbdcf7886856696502e1d55e00c",
        challenge="12345678abc90123d45678ef90123a456b",
        url="https://2captcha.com/demo/geetest",
    )
    assert_provider_s_answer(simulator, result)


def test_geetest_v4(solver: TwoCaptcha, simulator: Simulator) -> None:
    result = solver.geetest_v4(
        captcha_id="e392e1d7fd421dc63325744d5a2b9c73", url="https://2captcha.com/demo/geetest-v4"
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


class PingbackReceiver:
    """The worker's own pingback endpoint: records every form POST it gets."""

    def __init__(self) -> None:
        self.received: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                receiver.received.append({name: values[0] for name, values in form.items()})
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/captcha-done"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def receiver() -> Iterator[PingbackReceiver]:
    running = PingbackReceiver()
    running.thread.start()
    yield running
    running.server.shutdown()
    running.server.server_close()
    running.thread.join()


def test_the_client_s_own_pingback_gets_the_result_once_it_is_stored(
    solver: TwoCaptcha, simulator: Simulator, receiver: PingbackReceiver
) -> None:
    task_id = solver.send(
        method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL, callback=receiver.url
    )
    assert truth(simulator, task_id)["pingback_url"] != receiver.url  # ours, not the client's
    forwarded = wait_until(lambda: receiver.received, timeout=120, interval=0.5)
    assert forwarded == [{"id": task_id, "code": truth(simulator, task_id)["code"]}]


def forwarder_invocations(stack: LocalStack) -> int:
    return int(stack.health()["functions"]["PingbackForwardFunction"]["invocations"])


def test_a_result_nobody_asked_to_forward_never_invokes_the_forwarder(
    stack: LocalStack, solver: TwoCaptcha
) -> None:
    wait_until(stack.result_events_settled, timeout=60)
    before = forwarder_invocations(stack)
    # Given a task sent without pingback=, once its result is published and every delivery of
    # it is done,
    task_id = solver.send(method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL)
    wait_until(
        lambda: [e for e in stack.published_events() if e["detail"]["task_id"] == task_id],
        timeout=120,
        interval=0.5,
    )
    wait_until(stack.result_events_settled, timeout=60)
    # then the forward rule did not match it (pingback_forward "no"): no invocation, no read.
    assert forwarder_invocations(stack) == before


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
