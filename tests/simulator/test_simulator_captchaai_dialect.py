"""CaptchaAI's dialect on the wire (what its SDK's contract test does not show): threadsinfo by
GET and POST, answers in ``result`` with ``user_agent``, the submits each kind refuses, the thread
plan's three busy answers and HTTP 429 past the request rate; 2captcha's dialect beside it."""

from __future__ import annotations

import base64
import json

import pytest

from tests.simulator.simulator_helpers import wait_until

PAGE = "https://shop.example/login"
PROXY = {"proxy": "login:secret@127.0.0.1:3128", "proxytype": "HTTP"}
CELL = "data:image/png;base64," + base64.b64encode(b"cell" * 40).decode()
BLS = {f"image_base64_{index}": CELL for index in range(1, 10)}
IMAGE = base64.b64encode(bytes(range(256))).decode()
TWO_SECONDS = {"kind": "uniform", "min_seconds": 2000, "max_seconds": 2000}


def test_threadsinfo_answers_the_plan_by_get_and_by_post(start_simulator):
    client = start_simulator(threads=3, solve_time=TWO_SECONDS)
    client.submit_id()

    by_get = client.res_json(action="threadsinfo")
    by_post = client.session.post(
        f"{client.base_url}/res.php",
        data={"key": client.api_key, "action": "threadsinfo", "json": 1},
        timeout=5,
    ).json()
    bad_key = client.res_json(action="threadsinfo", key="f" * 32)

    assert by_get == by_post == {"threads": 3, "working_threads": 1}
    assert bad_key == {"status": 0, "request": "ERROR_KEY_DOES_NOT_EXIST"}
    assert client.simulator.threads_info() == by_get


def test_get_by_post_answers_as_by_get(start_simulator):
    client = start_simulator()
    task_id = client.submit_id()
    by_get = client.wait_for_result(task_id)

    by_post = client.session.post(
        f"{client.base_url}/res.php",
        data={"key": client.api_key, "action": "get", "id": task_id, "json": 1},
        timeout=5,
    ).json()

    assert by_post == by_get == {"status": 1, "request": client.truth(task_id)["code"]}


@pytest.mark.parametrize(
    "fields",
    [
        {"enterprise": 1},
        {"enterprise": 1, "version": "v3", "action": "login"},
        {"method": "cloudflare_challenge", "googlekey": "", **PROXY},
    ],
)
def test_enterprise_and_cloudflare_answer_in_result_with_the_user_agent(start_simulator, fields):
    client = start_simulator()
    task_id = client.submit_id(**fields)

    answer = client.wait_for_result(task_id)
    plain = client.res(action="get", id=task_id).text

    truth = client.truth(task_id)
    assert answer == {"status": 1, "result": truth["code"], "user_agent": truth["user_agent"]}
    assert truth["user_agent"].startswith("Mozilla/5.0")
    assert plain == f"OK|{truth['code']}"


def test_captchafox_answers_in_request_with_the_user_agent(start_simulator):
    client = start_simulator()
    task_id = client.submit_id(method="captchafox", googlekey="", sitekey="sk_1", **PROXY)

    answer = client.wait_for_result(task_id)

    truth = client.truth(task_id)
    assert answer == {"status": 1, "request": truth["code"], "user_agent": truth["user_agent"]}


@pytest.mark.parametrize(
    ("fields", "shape"),
    [
        ({"method": "base64", "body": IMAGE, "grid_size": "4x4", "instructions": "cars"}, list),
        ({"method": "bls", "instructions": "1234", **BLS}, list),
        ({"method": "lemin", "captcha_id": "CROPPED_1", "div_id": "lemin"}, dict),
        ({"method": "geetest", "gt": "f1ab", "challenge": "12ab"}, dict),
    ],
)
def test_structured_answers_are_json(start_simulator, fields, shape):
    client = start_simulator()
    task_id = client.submit_id(googlekey="", **fields)

    answer = json.loads(client.wait_for_result(task_id)["request"])

    assert isinstance(answer, shape)
    if fields["method"] == "lemin":
        assert set(answer) == {"answer", "challenge_uuid"}
    if fields.get("grid_size") == "4x4":
        assert set(answer) <= set(range(1, 17))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"method": "base64", "body": IMAGE, "grid_size": "5x5", "instructions": "x"}, "BAD"),
        ({"method": "base64", "body": IMAGE, "grid_size": "3x3"}, "BAD"),
        ({"method": "bls", "instructions": "1234", **BLS, "image_base64_9": ""}, "BAD"),
        ({"method": "bls", **BLS}, "BAD"),
        ({"method": "bls", "instructions": "1", **BLS, "image_base64_2": IMAGE}, "UPLOAD"),
        ({"method": "cloudflare_challenge"}, "BAD"),
        ({"method": "captchafox", "sitekey": "sk_1"}, "BAD"),
        ({"method": "captchafox", "googlekey": "", **PROXY}, "ERROR_GOOGLEKEY"),
        ({"method": "lemin", "captcha_id": "CROPPED_1"}, "BAD"),
        ({"method": "friendly_captcha", "sitekey": "FC1", "version": "v3"}, "BAD"),
        ({"method": "friendly_captcha", "googlekey": ""}, "ERROR_GOOGLEKEY"),
        ({"version": "v3", "min_score": "0.95"}, "BAD"),
        ({"method": "geetest", "gt": "f1ab"}, "BAD"),
        ({"method": "imagetotext"}, "BAD"),
    ],
)
def test_submit_errors_by_kind(start_simulator, fields, expected):
    client = start_simulator()
    code = {"BAD": "ERROR_BAD_PARAMETERS", "UPLOAD": "ERROR_UPLOAD"}.get(expected, expected)

    assert client.submit(json=1, **fields).json() == {"status": 0, "request": code}


@pytest.mark.parametrize(
    ("busy_answer", "refusal"),
    [(None, "ERROR_ZERO_BALANCE"), ("no_slot", "ERROR_NO_SLOT_AVAILABLE")],
)
def test_a_full_plan_refuses_until_a_thread_frees(start_simulator, busy_answer, refusal):
    client = start_simulator(threads=1, busy_answer=busy_answer, solve_time=TWO_SECONDS)
    first = client.submit_id()

    refused = client.submit(json=1).json()
    working = client.res_json(action="threadsinfo")
    finished_at = client.truth(first)["finished_at"]
    accepted = wait_until(lambda: client.submit(json=1).json()["status"] == 1, timeout=10)

    assert refused == {"status": 0, "request": refusal}
    assert working == {"threads": 1, "working_threads": 1}
    assert accepted
    assert client.simulator.task_ids()[-1] != first
    assert client.truth(client.simulator.task_ids()[-1])["submitted_at"] >= finished_at
    assert client.simulator.stats()["plan"]["busy_refused"] >= 1


def test_a_queueing_plan_starts_a_task_when_a_thread_frees(start_simulator):
    client = start_simulator(threads=1, busy_answer="queue", solve_time=TWO_SECONDS)
    first, second = client.submit_id(), client.submit_id()

    before = client.res_json(action="get", id=second)

    first_task, second_task = client.truth(first), client.truth(second)
    assert before == {"status": 0, "request": "CAPCHA_NOT_READY"}
    assert second_task["started_at"] == first_task["finished_at"]
    assert second_task["finished_at"] == pytest.approx(second_task["started_at"] + 2.0)
    assert client.res_json(action="threadsinfo") == {"threads": 1, "working_threads": 1}
    assert client.simulator.stats()["plan"]["queued"] == 1


def test_too_many_requests_in_a_second_get_http_429(start_simulator):
    client = start_simulator(time_scale=1.0, requests_per_second=3)

    statuses = [client.res(action="getbalance").status_code for _ in range(5)]

    assert statuses[:3] == [200, 200, 200]
    assert 429 in statuses[3:]
    assert client.simulator.stats()["plan"]["rate_limited"] >= 1


def test_the_2captcha_dialect_keeps_its_own_shapes(start_simulator):
    client = start_simulator(dialect="2captcha")
    grid = client.submit_id(method="base64", body=IMAGE, recaptcha=1)
    enterprise = client.submit_id(enterprise=1)
    challenge = client.submit_id(method="cloudflare_challenge")

    answers = [client.wait_for_result(task_id) for task_id in (grid, enterprise, challenge)]

    assert answers[0]["request"].startswith("click:")
    assert all(set(answer) == {"status", "request"} for answer in answers)
    assert client.res_json(action="threadsinfo") == {
        "status": 0,
        "request": "ERROR_BAD_PARAMETERS",
    }
    assert client.submit(json=1, method="lemin").json()["request"] == "ERROR_BAD_PARAMETERS"


def test_each_account_has_its_own_key_plan_tasks_and_balance(start_simulator):
    client = start_simulator(extra_accounts=[{"threads": 1}], solve_time=TWO_SECONDS)
    first_key, second_key = client.simulator.api_keys
    second_task = client.submit_id(key=second_key)

    second_busy = client.submit(json=1, key=second_key).json()
    first_accepts = client.submit(json=1, key=first_key).json()
    seen_by_first = client.res_json(action="get", id=second_task)
    batch_by_first = client.res_json(action="get", ids=second_task)
    seen_by_second = client.res_json(action="get", id=second_task, key=second_key)
    client.simulator.update_faults(zero_balance_accounts=[0])

    assert first_key == client.api_key != second_key
    assert client.truth(second_task)["account"] == 1
    assert second_busy == {"status": 0, "request": "ERROR_ZERO_BALANCE"}
    assert first_accepts["status"] == 1
    assert seen_by_first == {"status": 0, "request": "ERROR_WRONG_CAPTCHA_ID"}
    assert batch_by_first == {"status": 1, "request": "ERROR_WRONG_CAPTCHA_ID"}
    assert seen_by_second == {"status": 0, "request": "CAPCHA_NOT_READY"}
    assert client.res_json(action="threadsinfo", key=second_key) == {
        "threads": 1,
        "working_threads": 1,
    }
    assert client.submit(json=1).json() == {"status": 0, "request": "ERROR_ZERO_BALANCE"}
    assert client.res_json(action="getbalance") == {"status": 1, "request": "0.0"}
    assert client.res_json(action="getbalance", key=second_key)["request"] == "10.0"
