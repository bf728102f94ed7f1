"""Per-key budgets and the cached balance on the local stack, read from the simulator's request
counters: one key looping getbalance costs the provider one request per BalanceCacheSeconds; a
key gets exactly its in.php budget per minute and per second, read from the answers, the
provider's counters and RequestBudgetsTable's windows, while another key's submits go through.
Small budgets through the stack's parameter overrides."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from infra.local import LocalStack
from infra.local.runtime.aws import OTHER_WORKER, WORKER
from infra.simulator import Simulator
from pingback_guard.data.request_budgets import BUDGET_PREFIX, minute_of
from pingback_guard.domain.worker_keys import digest_of
from tests.local.support import QUICK_SOLVES
from tests.local.test_compat_protocol import in_php, issue_key, res_php

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

BALANCE_CACHE_SECONDS = 10
IN_PHP_PER_SECOND = 2
IN_PHP_PER_MINUTE = 3
SECOND_COUNTER = re.compile(r"s[0-9]{1,2}")
SIMULATOR = {**QUICK_SOLVES, "seed": 32}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,
    "parameter_overrides": {
        "BalanceCacheSeconds": str(BALANCE_CACHE_SECONDS),
        "InPhpBudgetPerSecond": str(IN_PHP_PER_SECOND),
        "InPhpBudgetPerMinute": str(IN_PHP_PER_MINUTE),
    },
    "workers_per_function": 1,
    # Two res.php containers: the cache and the refresh claim hold across them.
    "workers_by_function": {"CompatResultFunction": 2},
}
PAGE_URL = "https://www.google.com/recaptcha/api2/demo"


def provider_requests(simulator: Simulator, group: str, name: str) -> int:
    return simulator.stats()[group][name]


def test_one_key_looping_getbalance_reaches_the_provider_once_per_cache_interval(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    key = issue_key(stack, capsys, WORKER.user_arn)
    before = provider_requests(simulator, "res_actions", "getbalance")
    started = time.monotonic()
    answers = []
    while time.monotonic() - started < 2.5 * BALANCE_CACHE_SECONDS:
        answers.append(res_php(stack, key=key, action="getbalance").text)
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    asked = provider_requests(simulator, "res_actions", "getbalance") - before
    assert set(answers) == {str(float(simulator.config.balance))}
    assert 1 <= asked <= elapsed // BALANCE_CACHE_SECONDS + 1, (asked, len(answers))
    assert len(answers) > 3 * asked


@dataclass(frozen=True)
class Sent:
    """One in.php request: its answer, and the wall-clock interval it was admitted within (the
    functions run on this machine's clock)."""

    answer: str
    started: float
    ended: float

    @property
    def accepted(self) -> bool:
        return self.answer.startswith("OK|")

    def second(self) -> float | None:
        """The wall-clock second it was counted in, when its whole interval lies within one."""
        return float(int(self.started)) if int(self.started) == int(self.ended) else None


def submit(stack: LocalStack, key: str) -> Sent:
    started = time.time()
    answer = in_php(stack, key=key, method="hcaptcha", sitekey="site-key", pageurl=PAGE_URL).text
    return Sent(answer, started, time.time())


def budget_windows(stack: LocalStack, key: str) -> dict[int, dict[str, int]]:
    """The key's in.php counters in RequestBudgetsTable: minute -> {"requests": n, "sS": n}."""
    table = stack.ready.resources["RequestBudgetsTable"]["physical_id"]
    prefix = f"{BUDGET_PREFIX}in.php#{digest_of(key).key_id}#"
    items = stack.ready.aws_client("dynamodb").scan(TableName=table)["Items"]
    return {
        int(item["id"]["S"].removeprefix(prefix)): {
            name: int(value["N"])
            for name, value in item.items()
            if name == "requests" or SECOND_COUNTER.fullmatch(name)
        }
        for item in items
        if item["id"]["S"].startswith(prefix)
    }


def wait_for_a_minute_with_room(seconds: float) -> None:
    """Until the wall-clock minute has ``seconds`` left."""
    into_minute = time.time() % 60
    if into_minute > 60 - seconds:
        time.sleep(60 - into_minute + 0.05)


def test_a_key_gets_exactly_its_minute_s_budget_and_nothing_more_reaches_the_provider(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    rogue = issue_key(stack, capsys, WORKER.user_arn)
    other = issue_key(stack, capsys, OTHER_WORKER.user_arn)
    before = provider_requests(simulator, "in", "requests")
    # Given twice the minute's budget, sent within one wall-clock minute and at most
    # IN_PHP_PER_SECOND in any second (one every 0.55 s: the second's window never binds)
    requests_sent = 2 * IN_PHP_PER_MINUTE
    wait_for_a_minute_with_room(requests_sent * 0.55 + 15)
    minute = minute_of(time.time())
    sent = []
    for _ in range(requests_sent):
        sent.append(submit(stack, rogue))
        time.sleep(0.55)
    # Then exactly the minute's budget is admitted, in order, and only those reach the provider
    assert [s.accepted for s in sent] == [True] * IN_PHP_PER_MINUTE + [False] * IN_PHP_PER_MINUTE
    assert {s.answer for s in sent if not s.accepted} == {"MAX_USER_TURN"}
    assert provider_requests(simulator, "in", "requests") - before == IN_PHP_PER_MINUTE
    windows = budget_windows(stack, rogue)
    assert list(windows) == [minute]
    assert windows[minute]["requests"] == IN_PHP_PER_MINUTE
    assert sum(v for k, v in windows[minute].items() if k != "requests") == IN_PHP_PER_MINUTE
    # And another key has windows of its own
    assert submit(stack, other).accepted
    # res.php has a budget of its own: the rogue key still reads.
    assert res_php(stack, key=rogue, action="getbalance").text == str(
        float(simulator.config.balance)
    )


def test_a_burst_gets_exactly_its_second_s_budget(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    key = issue_key(stack, capsys, OTHER_WORKER.user_arn)
    # Given a burst of IN_PHP_PER_SECOND + 1 requests at once, as a second begins
    wait_for_a_minute_with_room(10)
    time.sleep(1 - time.time() % 1)
    with ThreadPoolExecutor(IN_PHP_PER_SECOND + 1) as pool:
        sent = list(pool.map(lambda _: submit(stack, key), range(IN_PHP_PER_SECOND + 1)))
    # Then each second's counter holds exactly the requests admitted in it, never over its budget
    windows = budget_windows(stack, key)
    counters = {
        float(minute * 60 + int(name[1:])): count
        for minute, window in windows.items()
        for name, count in window.items()
        if name != "requests"
    }
    assert all(count <= IN_PHP_PER_SECOND for count in counters.values()), counters
    assert sum(counters.values()) == sum(s.accepted for s in sent)
    seconds = {s.second() for s in sent}
    if len(seconds) == 1 and None not in seconds:
        # All within one second (the usual case): exactly its budget, the rest refused.
        assert sorted(s.accepted for s in sent) == [False] + [True] * IN_PHP_PER_SECOND
        assert counters == {seconds.pop(): IN_PHP_PER_SECOND}
