"""in.php / res.php on the local stack's API, against the simulator: a 2captcha client's exact
answers, per-worker keys issued and revoked by the CLI, one owner never reading another's task.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.local import LocalStack
from infra.local.runtime.aws import OTHER_WORKER, WORKER, fake_session
from infra.simulator import Simulator
from pingback_guard_cli.main import run
from tests.local.support import QUICK_SOLVES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {**QUICK_SOLVES, "seed": 25}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,
    "parameter_overrides": {"CallbackTimeoutSeconds": "10"},
    "workers_per_function": 1,
}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://www.google.com/recaptcha/api2/demo"


def cli(stack: LocalStack, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    ready = stack.ready
    session = fake_session(ready.region)
    base = ["--endpoint-url", ready.aws_endpoint_url, "--stack-name", ready.stack_name]
    code = run([*base, *args], session=session)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def issue_key(
    stack: LocalStack, capsys: pytest.CaptureFixture[str], owner: str, dialect: str = "2captcha"
) -> str:
    """A worker key for 2captcha's clients (these tests speak 2captcha's protocol) by default."""
    command = ("keys", "issue", "--owner", owner, "--dialect", dialect, "--json")
    issued = json.loads(cli(stack, capsys, *command))
    return str(issued["key"])


@pytest.fixture(autouse=True)
def calm(simulator: Simulator) -> Iterator[None]:
    yield
    simulator.update_faults(pingback_drop_rate=0.0)


def in_php(stack: LocalStack, **fields: str) -> requests.Response:
    return requests.post(f"{stack.ready.api_url}/in.php", data=fields, timeout=30)


def res_php(stack: LocalStack, **fields: str) -> requests.Response:
    return requests.get(f"{stack.ready.api_url}/res.php", params=fields, timeout=30)


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


def test_submit_and_poll_as_a_2captcha_client_with_every_pingback_dropped(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    key = issue_key(stack, capsys, WORKER.user_arn)
    simulator.update_faults(pingback_drop_rate=1.0)
    submitted = in_php(stack, key=key, method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL)
    assert submitted.status_code == 200 and submitted.text.startswith("OK|")
    task_id = submitted.text.removeprefix("OK|")

    def poll() -> str | None:
        answer = res_php(stack, key=key, action="get", id=task_id).text
        return None if answer == "CAPCHA_NOT_READY" else answer

    answer = wait_until(poll, timeout=120, interval=1)
    assert answer == f"OK|{truth(simulator, task_id)['code']}"
    as_json = res_php(stack, key=key, action="get", id=task_id, json="1").json()
    assert as_json == {"status": 1, "request": truth(simulator, task_id)["code"]}
    report = res_php(stack, key=key, action="reportbad", id=task_id)
    assert report.text == "OK_REPORT_RECORDED"
    assert res_php(stack, key=key, action="getbalance").text == str(float(simulator.config.balance))


def test_one_key_never_reads_another_owner_s_task_and_a_revoked_key_is_refused(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = issue_key(stack, capsys, WORKER.user_arn)
    theirs = issue_key(stack, capsys, OTHER_WORKER.user_arn)
    submitted = in_php(
        stack, key=mine, method="hcaptcha", sitekey="site-key", pageurl=PAGE_URL, json="1"
    ).json()
    assert submitted["status"] == 1
    task_id = str(submitted["request"])
    wait_until(lambda: truth(simulator, task_id)["finished"], timeout=60)
    assert res_php(stack, key=theirs, action="get", id=task_id).text == "ERROR_WRONG_CAPTCHA_ID"
    assert res_php(stack, key=theirs, action="get", id="1").text == "ERROR_WRONG_CAPTCHA_ID"
    listed = json.loads(cli(stack, capsys, "keys", "list", "--json"))
    key_id = hashlib.sha256(mine.encode()).hexdigest()[:16]
    assert key_id in {record["key_id"] for record in listed}
    assert mine not in json.dumps(listed)
    cli(stack, capsys, "keys", "revoke", key_id)
    assert res_php(stack, key=mine, action="get", id=task_id).text == "ERROR_KEY_DOES_NOT_EXIST"
    assert in_php(stack, key="x" * 32, method="hcaptcha").text == "ERROR_WRONG_USER_KEY"


def test_no_key_reaches_a_function_log_or_the_access_log(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    key = issue_key(stack, capsys, WORKER.user_arn)
    in_php(stack, key=key, method="turnstile", sitekey="0x4AAAA", pageurl=PAGE_URL)
    res_php(stack, key=key, action="get", id="12345")
    res_php(stack, key=key, action="getbalance")
    for log in Path(stack.ready.log_dir).iterdir():
        assert key not in log.read_text(errors="replace"), log.name


def test_an_anonymous_multipart_flood_gets_the_protocol_s_refusal_through_the_gateway(
    stack: LocalStack,
) -> None:
    """About 48,000 tiny parts (2.4 MB), as API Gateway hands them to the function: parsing stops
    past the part limit, or at the unknown key that comes first."""
    part = b'--f\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n'
    flood = part * (2_400_000 // len(part)) + b"--f--\r\n"
    unknown_key = b'--f\r\nContent-Disposition: form-data; name="key"\r\n\r\n' + b"0" * 32 + b"\r\n"
    for body, answer in (
        (flood, "ERROR_BAD_PARAMETERS"),
        (unknown_key + flood, "ERROR_KEY_DOES_NOT_EXIST"),
    ):
        refused = requests.post(
            f"{stack.ready.api_url}/in.php",
            data=body,
            headers={"content-type": "multipart/form-data; boundary=f"},
            timeout=60,
        )
        assert (refused.status_code, refused.text) == (200, answer)
