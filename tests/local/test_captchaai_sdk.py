"""CaptchaAI's published SDK (``captchaai`` 1.0.1, unmodified apart from ``base_url``) pointed at
the local stack with a worker key from `pingback-guard keys issue`: it constructs (its threadsinfo),
solves every type it offers with the provider's (the simulator's) exact answer, with every pingback
dropped and with them delivered, and a burst of 50 submits from one key completes with no "busy"
refusal raised to the caller (the stack answers ERROR_ZERO_BALANCE while the key's threads are all
in flight; the SDK asks threadsinfo, sees them full and retries).

The SDK sleeps through ``time.sleep`` in its client module (initial waits of 1-15 s, polls every
5 s, busy retries about 8 s apart); the test gives that module a faster clock, so its waits shrink
and its own logic (how many polls, how long to keep retrying) is unchanged. The SDK itself is not
changed: its transport is only watched, to count the busy answers it read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from captchaai import CaptchaAI
from captchaai.core.registry import REGISTRY, get_entry
from captchaai.core.result import SolveResult

from infra.local import LocalStack
from infra.local.runtime.aws import WORKER
from infra.local.up import issue_compat_key
from infra.simulator import Simulator
from pingback_guard.kinds.registry import may_answer_with_user_agent
from tests.captchaai_sdk import (
    PADDING,
    SDK_CALLS,
    expected_solution,
    sdk_clock_at,
)
from tests.local.support import QUICK_SOLVES
from tests.waiting import each_at_once, run_at_once

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(900)]

SIMULATOR = {**QUICK_SOLVES, "seed": 40}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s
    "parameter_overrides": {
        "CallbackTimeoutSeconds": "10",
        "ExpectedSolveSeconds": "5",
        # The burst is bounded by the key's threads here, not by its request rate (a rate refusal
        # is the same busy answer: tests/unit/test_key_threads.py).
        "InPhpBudgetPerSecond": "1000",
        "InPhpBudgetPerMinute": "10000",
        "ResPhpBudgetPerSecond": "1000",
        "ResPhpBudgetPerMinute": "10000",
    },
    "workers_per_function": 2,
}
SDK_SECONDS_PER_REAL_SECOND = 10.0
BURST = 50
BURST_THREADS = 10
# The burst's SDK clock: its 120 s of busy retries (core/config.py thread_busy_timeout) are 60 s
# here, enough for five waves of ten threads on a loaded 2-core machine (30 s was not: a CI run
# had 7 of 50 give up).
BURST_SDK_SPEED = 2.0
# With every pingback dropped a result reaches the table by res.php: the poller's sweep or a
# res.php get reading through.
BY_RES_PHP = {"poll", "read_through"}


@pytest.fixture(name="sdk_clock")
def fast_sdk_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    return sdk_clock_at(monkeypatch, SDK_SECONDS_PER_REAL_SECOND)


@pytest.fixture
def connect(
    stack: LocalStack, sdk_clock: Callable[[float], None]
) -> Iterator[Callable[..., CaptchaAI]]:
    """CaptchaAI's SDK constructed as its README shows, ``base_url`` the stack's API and a worker
    key issued for it (``threads``: the key's capacity); closed after the test."""
    opened: list[CaptchaAI] = []

    def connect_to(threads: int = 10) -> CaptchaAI:
        key = issue_compat_key(stack.ready, WORKER.user_arn, "captchaai sdk", threads=threads)
        sdk = CaptchaAI(key, base_url=stack.ready.api_url)
        opened.append(sdk)
        return sdk

    yield connect_to
    for sdk in opened:
        sdk.close()


@pytest.fixture(params=["dropped", "delivered"])
def pingbacks(request: pytest.FixtureRequest, simulator: Simulator) -> Iterator[str]:
    simulator.update_faults(pingback_drop_rate=1.0 if request.param == "dropped" else 0.0)
    yield str(request.param)
    simulator.update_faults(pingback_drop_rate=0.0)


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


def stored(stack: LocalStack, task_id: str) -> dict[str, Any]:
    item: dict[str, Any] = stack.ready.aws_client("dynamodb").get_item(
        TableName=stack.ready.tasks_table, Key={"task_id": {"S": task_id}}, ConsistentRead=True
    )["Item"]
    return item


def test_the_sdk_offers_no_type_the_test_does_not_run() -> None:
    assert set(REGISTRY) == set(SDK_CALLS)


def test_construction_reads_the_key_s_threads(connect: Callable[..., CaptchaAI]) -> None:
    sdk = connect(threads=7)
    assert sdk.threads_info() == {"threads": 7, "working_threads": 0}


def test_every_sdk_type_gets_the_provider_s_exact_answer(
    connect: Callable[..., CaptchaAI],
    stack: LocalStack,
    simulator: Simulator,
    pingbacks: str,
) -> None:
    """Every type at once, as a fleet sends them (a key each); each type judged on its own."""

    def solved_as_the_provider_answered(type_name: str) -> None:
        result = SDK_CALLS[type_name](connect())
        assert_provider_s_answer(stack, simulator, pingbacks, type_name, result)

    each_at_once(sorted(SDK_CALLS), solved_as_the_provider_answered, timeout=240)


def assert_provider_s_answer(
    stack: LocalStack, simulator: Simulator, pingbacks: str, type_name: str, result: SolveResult
) -> None:
    provider = truth(simulator, result.task_id)
    assert provider["method"] == get_entry(type_name).api_method
    assert result.solution == expected_solution(type_name, provider["code"])
    outcomes = [delivery["outcome"] for delivery in provider["deliveries"]]
    item = stored(stack, result.task_id)
    if pingbacks == "dropped":
        assert outcomes and all(outcome == "dropped" for outcome in outcomes), outcomes
        assert item["delivered_via"]["S"] in BY_RES_PHP
        # res.php brought the solver's user agent with the token: it is served beside it. A
        # reCAPTCHA Enterprise token the poller recovered from an ids= batch has none: the
        # batch has no room for it (logic/poll_batches.py).
        if item["delivered_via"]["S"] == "poll" and not may_answer_with_user_agent(
            provider["method"]
        ):
            assert result.user_agent in {provider["user_agent"], None}
        else:
            assert result.user_agent == provider["user_agent"]
    else:
        assert outcomes and all(outcome == 200 for outcome in outcomes), outcomes


def test_a_burst_of_50_from_one_key_completes_without_a_busy_refusal_raised(
    connect: Callable[..., CaptchaAI], sdk_clock: Callable[[float], None]
) -> None:
    sdk = connect(threads=BURST_THREADS)
    sdk_clock(BURST_SDK_SPEED)
    busy_answers = watch_busy_answers(sdk)
    numbers = itertools.count()

    def solve_one() -> SolveResult:
        return sdk.normal(f"SIMTEXT:burst {next(numbers)}".encode() + PADDING)

    results = run_at_once(BURST, solve_one, timeout=300)

    assert sorted(str(result.solution) for result in results) == sorted(
        f"burst {number}" for number in range(BURST)
    )
    # The key's ten threads were the wall: the stack said busy, the SDK waited and retried.
    assert busy_answers
    print(f"\nburst of {BURST} on {BURST_THREADS} threads: {len(busy_answers)} busy answers")


def watch_busy_answers(sdk: CaptchaAI) -> list[str]:
    """Each in.php answer ERROR_ZERO_BALANCE the SDK reads (its transport watched, not changed)."""
    seen: list[str] = []
    transport = sdk._transport
    send = transport.request_raw

    def watched(method: str, url: str, data: dict[str, Any]) -> Any:
        response = send(method, url, data)
        body = response.body or {}
        if url.endswith("/in.php") and body.get("request") == "ERROR_ZERO_BALANCE":
            seen.append(url)
        return response

    transport.request_raw = watched
    return seen
