"""CaptchaAI's published SDK (``captchaai`` 1.0.1, unmodified apart from ``base_url``) against the
simulator alone, in CaptchaAI's dialect: every type it offers comes back with the simulator's
exact answer (the solution parsed as the SDK parses it, the user agent where the type returns
one); the constructor's threadsinfo; a burst beyond the thread plan as each modelled answer makes
the SDK behave.

The SDK sleeps through ``time.sleep`` in its client module (initial waits of 1-15 s, polls every
5 s, busy retries about 8 s apart); the tests give that module a clock running faster, so its
waits shrink and its own logic (how many polls, how long to keep retrying) is unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from captchaai import CaptchaAI
from captchaai.core.registry import get_entry
from captchaai.core.result import SolveResult
from captchaai.exceptions import APIError, InvalidKeyError

from tests.captchaai_sdk import (
    PADDING,
    PAGE,
    SDK_CALLS,
    SITEKEY,
    expected_solution,
    sdk_clock_at,
)
from tests.simulator.simulator_helpers import FAST_CONFIG, SimulatorClient
from tests.waiting import run_at_once

SDK_SECONDS_PER_REAL_SECOND = 100.0


@pytest.fixture(name="sdk_clock")
def fast_sdk_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    return sdk_clock_at(monkeypatch, SDK_SECONDS_PER_REAL_SECOND)


@pytest.fixture
def connect(
    start_simulator: Callable[..., SimulatorClient], sdk_clock: Callable[[float], None]
) -> Iterator[Callable[..., tuple[SimulatorClient, CaptchaAI]]]:
    """A simulator with `overrides` and CaptchaAI's SDK constructed against it as its README
    shows, `base_url` pointing at the simulator; the SDK is closed after the test."""
    opened: list[CaptchaAI] = []

    def connect_to(**overrides: Any) -> tuple[SimulatorClient, CaptchaAI]:
        client = start_simulator(**overrides)
        sdk = CaptchaAI(client.api_key, base_url=client.base_url)
        opened.append(sdk)
        return client, sdk

    yield connect_to
    for sdk in opened:
        sdk.close()


@pytest.mark.parametrize("type_name", sorted(SDK_CALLS))
def test_every_sdk_type_gets_the_simulators_exact_answer(connect, type_name):
    client, sdk = connect()

    result = SDK_CALLS[type_name](sdk)

    truth = client.truth(result.task_id)
    entry = get_entry(type_name)
    assert truth["method"] == entry.api_method
    assert truth["answer_field"] == entry.solution_key
    assert result.solution == expected_solution(type_name, truth["code"])
    assert result.raw_text == truth["code"]
    assert result.user_agent == truth["user_agent"]
    assert (result.user_agent is not None) == entry.returns_user_agent


def test_the_sdk_offers_no_type_the_test_does_not_run():
    from captchaai.core.registry import REGISTRY

    assert set(REGISTRY) == set(SDK_CALLS)


def test_construction_reads_the_thread_plan_and_checks_the_key(connect):
    client, sdk = connect(threads=7)

    counts = sdk.threads_info()

    assert counts == {"threads": 7, "working_threads": 0}
    assert client.simulator.stats()["res_actions"]["threadsinfo"] == 2
    with pytest.raises(InvalidKeyError):
        CaptchaAI("0" * 32, base_url=client.base_url)


def test_send_then_get_result_by_get_polls(connect):
    client, sdk = connect()

    task_id = sdk.send("turnstile", sitekey="0x4AAAAAAAC3DHQFLr1GavRN", pageurl=PAGE)
    result = sdk.get_result("turnstile", task_id)

    assert result.solution == client.truth(task_id)["code"]


def test_an_unsolvable_task_raises_the_sdks_unsolvable_error(connect):
    from captchaai.exceptions import UnsolvableError

    _, sdk = connect(unsolvable_rate=1.0)

    with pytest.raises(UnsolvableError):
        sdk.recaptcha_v2(SITEKEY, PAGE)


# The burst: four images at once on a plan of two threads, each solving in 0.6 s. The SDK's busy
# retries (about 8-11 s apart on its clock) land 0.8-1.1 s later on this one: after the first two
# have given their threads back, never in the instant between a refusal and the SDK's threadsinfo.
BURST = 4
BURST_PLAN: dict[str, Any] = {
    **FAST_CONFIG,
    "threads": 2,
    "solve_time": {"kind": "uniform", "min_seconds": 2000, "max_seconds": 2000},
}
BURST_SDK_SPEED = 10.0


def burst(sdk: CaptchaAI) -> list[SolveResult]:
    numbers = itertools.count()

    def solve_one() -> SolveResult:
        return sdk.normal(f"SIMTEXT:burst {next(numbers)}".encode() + PADDING)

    return run_at_once(BURST, solve_one)


def most_solving_at_once(tasks: list[dict[str, Any]]) -> int:
    events = sorted(
        [(task["started_at"], 1) for task in tasks] + [(task["finished_at"], -1) for task in tasks],
        key=lambda event: (event[0], event[1]),
    )
    return max(itertools.accumulate(change for _, change in events))


def test_a_burst_beyond_the_plan_is_refused_busy_and_the_sdk_retries_it(connect, sdk_clock):
    client, sdk = connect(**BURST_PLAN)
    sdk_clock(BURST_SDK_SPEED)

    results = burst(sdk)

    stats = client.simulator.stats()
    assert sorted(str(result.solution) for result in results) == [
        f"burst {number}" for number in range(BURST)
    ]
    assert stats["in_errors"] == {"ERROR_ZERO_BALANCE": BURST - 2}
    assert stats["plan"]["busy_refused"] == BURST - 2
    # The constructor's threadsinfo, then one per refusal: the SDK's "busy or no plan?" check.
    assert stats["res_actions"]["threadsinfo"] == 1 + BURST - 2
    assert most_solving_at_once(client.simulator.tasks()) == 2


def test_a_burst_beyond_a_queueing_plan_waits_for_threads(connect, sdk_clock):
    client, sdk = connect(**BURST_PLAN, busy_answer="queue")
    sdk_clock(BURST_SDK_SPEED)

    results = burst(sdk)

    tasks = client.simulator.tasks()
    assert len({str(result.solution) for result in results}) == BURST
    assert client.simulator.stats()["in"]["rejected"] == 0
    assert sum(task["started_at"] > task["submitted_at"] for task in tasks) == BURST - 2
    assert most_solving_at_once(tasks) == 2


def test_no_slot_available_is_a_code_the_sdk_does_not_know(connect):
    _, sdk = connect(**{**BURST_PLAN, "threads": 1, "busy_answer": "no_slot"})
    sdk.send("turnstile", sitekey="0x4AAAAAAAC3DHQFLr1GavRN", pageurl=PAGE)

    with pytest.raises(APIError, match="Unexpected submit error: ERROR_NO_SLOT_AVAILABLE"):
        sdk.send("turnstile", sitekey="0x4AAAAAAAC3DHQFLr1GavRN", pageurl=PAGE)
