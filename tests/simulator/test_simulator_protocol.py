"""in.php and res.php as a client sees them: ids, polling, batches, retention, reports, errors."""

from __future__ import annotations

import re
import time

import pytest

from infra.simulator.tokens import TOKEN_ALPHABET, make_token
from tests.simulator.simulator_helpers import SITEKEY, wait_until

TASK_ID = re.compile(r"[0-9]{11}")
# Solve times for tests that must see a task before it is solved, with room for a slow machine.
HALF_SECOND = {"kind": "uniform", "min_seconds": 500, "max_seconds": 500}
FIVE_SECONDS = {"kind": "uniform", "min_seconds": 5000, "max_seconds": 5000}


def is_token(text: str) -> bool:
    return 500 <= len(text) <= 4000 and set(text) <= set(TOKEN_ALPHABET)


def test_json_submit_answers_the_id_as_a_json_number(start_simulator):
    client = start_simulator()

    answer = client.submit(json=1).json()

    assert answer["status"] == 1
    assert isinstance(answer["request"], int)
    assert TASK_ID.fullmatch(str(answer["request"]))


def test_ids_can_be_sent_as_json_strings(start_simulator):
    client = start_simulator(ids_as_numbers=False)

    answer = client.submit(json=1).json()

    assert isinstance(answer["request"], str)
    assert TASK_ID.fullmatch(answer["request"])


def test_plain_submit_answers_ok_and_the_id(start_simulator):
    client = start_simulator()

    response = client.submit()

    assert response.status_code == 200
    assert re.fullmatch(r"OK\|[0-9]{11}", response.text)


def test_submit_by_get_query_is_accepted(start_simulator):
    client = start_simulator()

    assert client.submit(via="GET", json=1).json()["status"] == 1


def test_hcaptcha_and_turnstile_take_a_sitekey(start_simulator):
    client = start_simulator()

    for method in ("hcaptcha", "turnstile"):
        answer = client.submit(json=1, method=method, googlekey="", sitekey="site-key").json()
        assert answer["status"] == 1


def test_task_ids_are_unique_and_increasing(start_simulator):
    client = start_simulator()

    task_ids = [int(client.submit_id()) for _ in range(20)]

    assert task_ids == sorted(set(task_ids))


def test_json_poll_is_not_ready_then_answers_the_token(start_simulator):
    client = start_simulator(solve_time=HALF_SECOND)
    task_id = client.submit_id()

    first = client.res_json(action="get", id=task_id)
    result = client.wait_for_result(task_id)

    assert first == {"status": 0, "request": "CAPCHA_NOT_READY"}
    assert result["status"] == 1
    assert is_token(result["request"])
    assert result["request"] == client.truth(task_id)["code"]


def test_plain_poll_is_not_ready_then_answers_ok_and_the_token(start_simulator):
    client = start_simulator(solve_time=HALF_SECOND)
    task_id = client.submit_id()

    first = client.res(action="get", id=task_id).text
    final = wait_until(
        lambda: (text := client.res(action="get", id=task_id).text) != first and text
    )

    assert first == "CAPCHA_NOT_READY"
    assert final.startswith("OK|")
    assert is_token(final.removeprefix("OK|"))


def test_unsolvable_task_answers_error_captcha_unsolvable(start_simulator):
    client = start_simulator(unsolvable_rate=1.0)
    task_id = client.submit_id()

    result = client.wait_for_result(task_id)

    assert result == {"status": 0, "request": "ERROR_CAPTCHA_UNSOLVABLE"}
    assert client.res(action="get", id=task_id).text == "ERROR_CAPTCHA_UNSOLVABLE"


def test_batch_answers_every_id_in_the_order_asked(start_simulator):
    # Solve times spread over 10 s: the first results come within a second or two, the last
    # several seconds after them, however slow the machine is to get there.
    client = start_simulator(
        solve_time={"kind": "uniform", "min_seconds": 0, "max_seconds": 10_000},
        unsolvable_rate=0.5,
    )
    task_ids = [client.submit_id() for _ in range(40)]

    def finished_ids() -> tuple[list[str], list[str]] | None:
        truth = {task["id"]: task for task in client.simulator.tasks()}
        done = [i for i in task_ids if truth[i]["finished"]]
        solved = [i for i in done if truth[i]["outcome"] == "solved"]
        failed = [i for i in done if truth[i]["outcome"] == "failed"]
        return (solved, failed) if len(solved) >= 2 and failed else None

    solved, failed = wait_until(finished_ids)
    truth = {task["id"]: task for task in client.simulator.tasks()}
    pending = max(task_ids, key=lambda i: truth[i]["finished_at"])
    asked = [pending, solved[0], "12345678901", failed[0], "12x", solved[1]]

    json_answer = client.res_json(action="get", ids=",".join(asked))
    plain_answer = client.res(action="get", ids=",".join(asked)).text
    answered_by = time.time()

    assert answered_by < truth[pending]["finished_at"], "the last task finished before the batch"
    expected = "|".join(
        [
            "CAPCHA_NOT_READY",
            truth[solved[0]]["code"],
            "ERROR_WRONG_CAPTCHA_ID",
            "ERROR_CAPTCHA_UNSOLVABLE",
            "ERROR_WRONG_ID_FORMAT",
            truth[solved[1]]["code"],
        ]
    )
    assert json_answer == {"status": 1, "request": expected}
    assert plain_answer == expected


def test_batch_takes_at_most_100_ids(start_simulator):
    client = start_simulator(solve_time=FIVE_SECONDS)
    task_id = client.submit_id()

    hundred = client.res_json(action="get", ids=",".join([task_id] * 100))
    too_many = client.res_json(action="get", ids=",".join([task_id] * 101))

    assert hundred["status"] == 1
    assert hundred["request"].split("|") == ["CAPCHA_NOT_READY"] * 100
    assert too_many == {"status": 0, "request": "ERROR_BAD_PARAMETERS"}


def test_batch_is_refused_when_ids_are_not_supported(start_simulator):
    client = start_simulator(support_ids=False, solve_time=FIVE_SECONDS)
    task_id = client.submit_id()

    assert client.res_json(action="get", ids=task_id)["request"] == "ERROR_BAD_PARAMETERS"
    assert client.res_json(action="get", id=task_id)["request"] == "CAPCHA_NOT_READY"


def test_result_is_forgotten_after_the_retention(start_simulator):
    client = start_simulator(result_retention_seconds=300)
    task_id = client.submit_id()
    client.wait_for_result(task_id)
    forgotten_at = client.truth(task_id)["retrievable_until"]

    time.sleep(max(0.0, forgotten_at - time.time()) + 0.05)

    assert client.res_json(action="get", id=task_id)["request"] == "ERROR_WRONG_CAPTCHA_ID"
    assert client.res_json(action="get", ids=task_id)["request"] == "ERROR_WRONG_CAPTCHA_ID"


def test_reports_are_recorded_only_within_the_window_after_solve(start_simulator):
    # A window of 3 s real: the two reports inside it do not race a loaded machine's clock.
    client = start_simulator(report_window_seconds=3000, solve_time=HALF_SECOND)
    task_id = client.submit_id()

    too_early = client.res_json(action="reportbad", id=task_id)
    client.wait_for_result(task_id)
    bad = client.res_json(action="reportbad", id=task_id)
    good = client.res(action="reportgood", id=task_id).text
    reported_by = time.time()
    time.sleep(max(0.0, client.truth(task_id)["reportable_until"] - time.time()) + 0.05)
    too_late = client.res_json(action="reportgood", id=task_id)

    assert too_early == {"status": 0, "request": "ERROR_WRONG_CAPTCHA_ID"}
    assert reported_by < client.truth(task_id)["reportable_until"], "the reports came too late"
    assert bad == {"status": 1, "request": "OK_REPORT_RECORDED"}
    assert good == "OK_REPORT_RECORDED"
    assert too_late == {"status": 0, "request": "ERROR_WRONG_CAPTCHA_ID"}
    assert client.truth(task_id)["reports"] == ["reportbad", "reportgood"]


def test_balance_is_answered_and_drops_to_zero_with_the_fault(start_simulator):
    client = start_simulator(balance=12.5)

    before = client.res_json(action="getbalance")
    plain = client.res(action="getbalance").text
    client.simulator.update_faults(zero_balance=True)
    after = client.res_json(action="getbalance")

    assert before == {"status": 1, "request": "12.5"}
    assert plain == "12.5"
    assert after == {"status": 1, "request": "0.0"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"key": "not-a-key"}, "ERROR_WRONG_USER_KEY"),
        ({"key": ""}, "ERROR_WRONG_USER_KEY"),
        ({"key": "0" * 32}, "ERROR_KEY_DOES_NOT_EXIST"),
        ({"googlekey": ""}, "ERROR_GOOGLEKEY"),
        ({"pageurl": ""}, "ERROR_PAGEURL"),
        ({"method": "hcaptcha", "googlekey": ""}, "ERROR_GOOGLEKEY"),
        ({"method": "turnstile", "sitekey": SITEKEY, "pageurl": ""}, "ERROR_PAGEURL"),
        ({"method": "imagetotext"}, "ERROR_BAD_PARAMETERS"),
        ({"proxy": "not a proxy", "proxytype": "HTTP"}, "ERROR_BAD_PROXY"),
        ({"proxy": "user:pw@127.0.0.1:3128", "proxytype": "FTP"}, "ERROR_BAD_PROXY"),
    ],
)
def test_submit_errors(start_simulator, fields, expected):
    client = start_simulator()

    json_answer = client.submit(json=1, **fields).json()
    plain_answer = client.submit(**fields).text

    assert json_answer == {"status": 0, "request": expected}
    assert plain_answer == expected
    assert client.simulator.stats()["in_errors"][expected] == 2


def test_submit_with_a_valid_proxy_is_accepted(start_simulator):
    client = start_simulator()

    answer = client.submit(json=1, proxy="user:pw@127.0.0.1:3128", proxytype="SOCKS5").json()

    assert answer["status"] == 1


def test_submit_fault_zero_balance(start_simulator):
    client = start_simulator(faults={"zero_balance": True})

    assert client.submit(json=1).json() == {"status": 0, "request": "ERROR_ZERO_BALANCE"}


def test_submit_fault_no_slot_available(start_simulator):
    client = start_simulator(faults={"in_no_slot_rate": 1.0})

    assert client.submit().text == "ERROR_NO_SLOT_AVAILABLE"
    client.simulator.update_faults(in_no_slot_rate=0.0)
    assert client.submit().text.startswith("OK|")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"action": "get", "id": "12ab"}, "ERROR_WRONG_ID_FORMAT"),
        ({"action": "get", "id": ""}, "ERROR_WRONG_ID_FORMAT"),
        ({"action": "get", "id": "12345678901"}, "ERROR_WRONG_CAPTCHA_ID"),
        ({"action": "get", "ids": ""}, "ERROR_BAD_PARAMETERS"),
        ({"action": "reportbad", "id": "12345678901"}, "ERROR_WRONG_CAPTCHA_ID"),
        ({"action": "reportgood", "id": "x"}, "ERROR_WRONG_ID_FORMAT"),
        ({"action": ""}, "ERROR_EMPTY_ACTION"),
        ({"action": "delete"}, "ERROR_BAD_PARAMETERS"),
        ({"action": "getbalance", "key": "f" * 31}, "ERROR_WRONG_USER_KEY"),
        ({"action": "get", "id": "1", "key": "f" * 32}, "ERROR_KEY_DOES_NOT_EXIST"),
    ],
)
def test_result_errors(start_simulator, params, expected):
    client = start_simulator()

    assert client.res_json(**params) == {"status": 0, "request": expected}
    assert client.res(**params).text == expected


def test_same_seed_gives_the_same_run(start_simulator):
    def run(seed: int) -> tuple[str, list[tuple[str, str, str]], list[float]]:
        client = start_simulator(seed=seed, solve_time={}, unsolvable_rate=0.3)
        task_ids = [client.submit_id() for _ in range(8)]
        tasks = [client.truth(task_id) for task_id in task_ids]
        fates = [(task["id"], task["outcome"], task["code"]) for task in tasks]
        solve_seconds = [task["finished_at"] - task["submitted_at"] for task in tasks]
        return client.api_key, fates, solve_seconds

    key, fates, solve_seconds = run(11)
    key_again, fates_again, solve_seconds_again = run(11)
    other_key, other_fates, _ = run(12)

    assert (key, fates) == (key_again, fates_again)
    assert solve_seconds == pytest.approx(solve_seconds_again, abs=1e-5)
    assert key != other_key
    assert fates != other_fates
    assert {fate[1] for fate in fates} == {"solved", "failed"}


def test_tokens_depend_only_on_seed_and_task_id():
    token = make_token(3, "71234567890", 500, 4000)

    assert token == make_token(3, "71234567890", 500, 4000)
    assert token != make_token(4, "71234567890", 500, 4000)
    assert token != make_token(3, "71234567891", 500, 4000)
    assert token.startswith("03A")
    assert is_token(token)
