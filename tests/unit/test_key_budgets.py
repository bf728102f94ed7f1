"""Per-key request budgets and the stack's cached balance on in.php / res.php: a key over its
budget gets the provider's answer for a key that asks too often and reaches nothing; another key
is unaffected; the balance is read from the provider once per refresh interval."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pingback_guard.domain.errors import (
    ConfigurationError,
    ProviderAccountError,
    ProviderRetryableError,
)
from pingback_guard.domain.request_budgets import RequestLimits
from pingback_guard.logic.compat import Event
from pingback_guard.logic.request_budgets import SharedBalance
from pingback_guard.settings.compat_result import CompatResultSettings
from pingback_guard.settings.compat_submit import CompatSubmitSettings
from tests.fakes import InMemoryRequestBudgets
from tests.support import template_environment
from tests.unit.test_compat_logic import Stack, words

MINUTE = 1020.0  # a minute's first second
TIGHT = RequestLimits(per_second=2, per_minute=3)


@dataclass
class CountingBalance:
    """The provider's getbalance: counts each request, answers or fails as told."""

    balance_value: float = 12.5
    failure: Exception | None = None
    requests: int = 0

    def balance(self) -> float:
        self.requests += 1
        if self.failure is not None:
            raise self.failure
        return self.balance_value


def at(stack: Stack, now: float) -> Stack:
    stack.now = now
    return stack


def test_an_in_php_key_over_its_budget_gets_max_user_turn_and_reaches_no_provider() -> None:
    stack = at(Stack(in_php=TIGHT), MINUTE)
    assert [stack.submit(stack.worker_key).event for _ in range(2)] == [Event.SUBMITTED] * 2
    refused = stack.submit(stack.worker_key)
    assert words(refused) == (0, "MAX_USER_TURN")
    assert refused.event is Event.OVER_BUDGET
    assert len(stack.provider.submitted) == 2
    # The key's id names it for the operator; the key itself is never in the outcome.
    assert refused.key_id is not None and refused.key_id in stack.keys.records
    assert stack.worker_key not in repr(refused)


def test_a_res_php_key_over_its_minute_gets_error_1005_until_the_minute_rolls_over() -> None:
    stack = at(Stack(res_php=TIGHT), MINUTE)
    answers = []
    for second in (0, 0, 1, 1, 59):
        stack.now = MINUTE + second
        answers.append(words(stack.res(stack.worker_key, action="get", id="1"))[1])
    assert answers == ["ERROR_WRONG_CAPTCHA_ID"] * 3 + ["ERROR: 1005"] * 2
    stack.now = MINUTE + 60
    assert words(stack.res(stack.worker_key, action="get", id="1")) == (0, "ERROR_WRONG_CAPTCHA_ID")


def test_the_second_rolls_over_and_a_refused_request_spends_nothing() -> None:
    stack = at(Stack(res_php=TIGHT), MINUTE)
    answers = [words(stack.res(stack.worker_key, action="get", id="1"))[1] for _ in range(6)]
    assert answers == ["ERROR_WRONG_CAPTCHA_ID"] * 2 + ["ERROR: 1005"] * 4
    # The four refusals were not counted: the minute still has room for one more.
    stack.now = MINUTE + 1
    assert words(stack.res(stack.worker_key, action="get", id="1")) == (0, "ERROR_WRONG_CAPTCHA_ID")


def test_another_key_is_unaffected_by_a_key_over_its_budget() -> None:
    stack = at(Stack(in_php=TIGHT, res_php=TIGHT), MINUTE)
    for _ in range(5):
        stack.submit(stack.worker_key)
        stack.res(stack.worker_key, action="getbalance")
    assert words(stack.submit(stack.worker_key)) == (0, "MAX_USER_TURN")
    assert stack.submit(stack.other_key).event is Event.SUBMITTED
    assert words(stack.res(stack.other_key, action="getbalance")) == (1, "1.0")


def test_each_endpoint_has_its_own_budget() -> None:
    stack = at(Stack(in_php=TIGHT), MINUTE)
    for _ in range(3):
        stack.submit(stack.worker_key)
    assert words(stack.submit(stack.worker_key)) == (0, "MAX_USER_TURN")
    assert stack.res(stack.worker_key, action="getbalance").event is Event.ANSWERED


def test_a_budget_table_that_cannot_answer_refuses_with_503_and_reaches_no_provider() -> None:
    stack = at(Stack(), MINUTE)
    stack.budgets.available = False
    outcome = stack.submit(stack.worker_key)
    assert outcome.event is Event.STORE_UNAVAILABLE and outcome.answer.http_status == 503
    assert stack.provider.submitted == []


def test_looping_getbalance_reads_the_provider_once_per_refresh_interval() -> None:
    provider = CountingBalance()
    stack = at(Stack(balance=provider), MINUTE)
    for second in range(0, 60, 2):
        stack.now = MINUTE + second
        assert words(stack.res(stack.worker_key, action="getbalance")) == (1, "12.5")
    assert provider.requests == 1
    provider.balance_value = 11.0
    stack.now = MINUTE + 60
    assert words(stack.res(stack.other_key, action="getbalance")) == (1, "11.0")
    assert words(stack.res(stack.worker_key, action="getbalance")) == (1, "11.0")
    assert provider.requests == 2


def test_containers_sharing_the_table_refresh_the_balance_once() -> None:
    store, provider = InMemoryRequestBudgets(), CountingBalance()
    containers = [SharedBalance(store, provider, 60, clock=lambda: MINUTE) for _ in range(5)]
    assert [container.balance() for container in containers] == [12.5] * 5
    assert provider.requests == 1


def test_while_another_container_reads_the_first_balance_a_caller_is_told_to_retry() -> None:
    store = InMemoryRequestBudgets()
    assert store.claim_balance_refresh(MINUTE, 60)  # another container, still waiting on it
    provider = CountingBalance()
    with pytest.raises(ProviderRetryableError):
        SharedBalance(store, provider, 60, clock=lambda: MINUTE + 1).balance()
    assert provider.requests == 0


def test_a_failing_provider_is_asked_once_per_interval_and_the_last_balance_is_served() -> None:
    provider = CountingBalance()
    stack = at(Stack(balance=provider), MINUTE)
    stack.res(stack.worker_key, action="getbalance")
    provider.failure = ProviderRetryableError("res.php getbalance: timeout")
    for second in range(60, 120, 5):
        stack.now = MINUTE + second
        assert words(stack.res(stack.worker_key, action="getbalance")) == (1, "12.5")
    assert provider.requests == 2


def test_the_provider_s_account_error_is_served_to_everyone_until_the_next_refresh() -> None:
    provider = CountingBalance(failure=ProviderAccountError("key", code="ERROR_KEY_DOES_NOT_EXIST"))
    stack = at(Stack(balance=provider), MINUTE)
    for key in (stack.worker_key, stack.other_key):
        outcome = stack.res(key, action="getbalance")
        assert words(outcome) == (0, "ERROR_KEY_DOES_NOT_EXIST")
        assert outcome.event is Event.ACCOUNT_ERROR
    assert provider.requests == 1


def test_each_compat_function_reads_its_own_budget_from_the_template() -> None:
    submit = CompatSubmitSettings.from_env(template_environment("CompatSubmitFunction"))
    results = CompatResultSettings.from_env(template_environment("CompatResultFunction"))
    assert submit.budget.limits == RequestLimits(per_second=10, per_minute=50)
    assert results.budget.limits == RequestLimits(per_second=10, per_minute=300)
    assert results.balance_cache_seconds == 60
    assert submit.budget.table_name == results.budget.table_name


def test_a_budget_of_zero_fails_the_cold_start() -> None:
    environment = template_environment("CompatSubmitFunction", IN_PHP_BUDGET_PER_SECOND="0")
    with pytest.raises(ConfigurationError, match="IN_PHP_BUDGET_PER_SECOND"):
        CompatSubmitSettings.from_env(environment)
