"""Per-key budgets and the cached balance on the local stack, read from the simulator's request
counters: one key looping getbalance costs the provider one request per BalanceCacheSeconds, and
a key over its in.php budget is refused (nothing reaches the provider) while another key's
submits go through. Small budgets through the stack's parameter overrides."""

from __future__ import annotations

import time
from typing import Any

import pytest

from infra.local import LocalStack
from infra.local.runtime.aws import OTHER_WORKER, WORKER
from infra.simulator import Simulator
from tests.local.support import QUICK_SOLVES
from tests.local.test_compat_protocol import in_php, issue_key, res_php

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

BALANCE_CACHE_SECONDS = 10
IN_PHP_PER_MINUTE = 3
SIMULATOR = {**QUICK_SOLVES, "seed": 32}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,
    "parameter_overrides": {
        "BalanceCacheSeconds": str(BALANCE_CACHE_SECONDS),
        "InPhpBudgetPerSecond": "2",
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


def test_a_key_over_its_in_php_budget_is_refused_while_another_key_submits(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    rogue = issue_key(stack, capsys, WORKER.user_arn)
    other = issue_key(stack, capsys, OTHER_WORKER.user_arn)
    before = provider_requests(simulator, "in", "requests")
    # One burst touches at most two minute windows: more than two minutes' budget is refused.
    answers = [
        in_php(stack, key=rogue, method="hcaptcha", sitekey="site-key", pageurl=PAGE_URL).text
        for _ in range(2 * IN_PHP_PER_MINUTE + 1)
    ]
    accepted = [answer for answer in answers if answer.startswith("OK|")]
    assert "MAX_USER_TURN" in answers
    assert set(answers) - set(accepted) == {"MAX_USER_TURN"}
    assert provider_requests(simulator, "in", "requests") - before == len(accepted)
    submitted = in_php(stack, key=other, method="hcaptcha", sitekey="site-key", pageurl=PAGE_URL)
    assert submitted.text.startswith("OK|")
    # res.php has a budget of its own: the rogue key still reads.
    assert res_php(stack, key=rogue, action="getbalance").text == str(
        float(simulator.config.balance)
    )
