"""A worker key's threads (CaptchaAI's plan model) and the "busy" answer each client family reads:
threadsinfo counts the key's tasks in flight; a key with every thread in flight, or over its
request rate, gets ERROR_ZERO_BALANCE and a threadsinfo that shows the plan full (CaptchaAI's SDK
then waits and retries: captchaai 1.0.1 core/orchestrator.py), a 2captcha key its own codes."""

from __future__ import annotations

import json

from pingback_guard.domain.request_budgets import RequestLimits
from pingback_guard.domain.worker_keys import Dialect
from pingback_guard.logic.compat import Event
from pingback_guard.logic.key_threads import LEASE_SECONDS, RATE_BUSY_SECONDS
from tests.unit.test_compat_logic import TOKEN, Stack, words


def threads_info(stack: Stack, key: str) -> dict[str, int]:
    outcome = stack.res(key, action="threadsinfo", json="1")
    document: dict[str, int] = json.loads(outcome.answer.render(as_json=True))
    return {name: document[name] for name in ("threads", "working_threads")}


def test_threadsinfo_answers_the_key_s_capacity_and_its_tasks_in_flight() -> None:
    stack = Stack(dialect=Dialect.CAPTCHAAI, threads=3)
    assert threads_info(stack, stack.worker_key) == {"threads": 3, "working_threads": 0}
    stack.submit(stack.worker_key)
    stack.submit(stack.worker_key)
    assert threads_info(stack, stack.worker_key) == {"threads": 3, "working_threads": 2}
    # Another key's tasks are its own.
    assert threads_info(stack, stack.other_key) == {"threads": 3, "working_threads": 0}


def test_a_captchaai_key_with_every_thread_in_flight_is_told_zero_balance_and_busy() -> None:
    stack = Stack(dialect=Dialect.CAPTCHAAI, threads=2)
    first = stack.submit(stack.worker_key)
    stack.submit(stack.worker_key)
    refused = stack.submit(stack.worker_key)
    assert words(refused) == (0, "ERROR_ZERO_BALANCE")
    assert refused.event is Event.THREADS_BUSY and len(stack.provider.submitted) == 2
    info = threads_info(stack, stack.worker_key)
    assert info["working_threads"] >= info["threads"]
    # The key reads its first task final: its thread is free, the next submit goes through.
    assert first.task_id is not None
    stack.solve(first.task_id)
    assert words(stack.res(stack.worker_key, action="get", id=first.task_id)) == (1, f"OK|{TOKEN}")
    assert stack.submit(stack.worker_key).event is Event.SUBMITTED


def test_a_thread_never_read_again_is_free_after_its_lease() -> None:
    stack = Stack(dialect=Dialect.CAPTCHAAI, threads=1)
    stack.submit(stack.worker_key)
    assert stack.submit(stack.worker_key).event is Event.THREADS_BUSY
    stack.now += LEASE_SECONDS + 1
    assert stack.submit(stack.worker_key).event is Event.SUBMITTED


def test_a_refused_submit_gives_its_thread_back() -> None:
    stack = Stack(dialect=Dialect.CAPTCHAAI, threads=1)
    assert words(stack.submit(stack.worker_key, pageurl="not a url")) == (0, "ERROR_PAGEURL")
    assert threads_info(stack, stack.worker_key)["working_threads"] == 0


def test_a_captchaai_key_over_its_rate_is_told_zero_balance_and_threadsinfo_shows_busy() -> None:
    stack = Stack(in_php=RequestLimits(per_second=1, per_minute=60), dialect=Dialect.CAPTCHAAI)
    stack.submit(stack.worker_key)
    refused = stack.submit(stack.worker_key)
    assert words(refused) == (0, "ERROR_ZERO_BALANCE") and refused.event is Event.OVER_BUDGET
    info = threads_info(stack, stack.worker_key)
    assert info["working_threads"] >= info["threads"]
    stack.now += RATE_BUSY_SECONDS + 1
    assert threads_info(stack, stack.worker_key)["working_threads"] == 1


def test_a_captchaai_key_over_its_read_budget_is_told_not_ready_and_busy() -> None:
    stack = Stack(res_php=RequestLimits(per_second=1, per_minute=60), dialect=Dialect.CAPTCHAAI)
    task_id = str(stack.submit(stack.worker_key).task_id)
    stack.solve(task_id)
    stack.res(stack.worker_key, action="getbalance")
    assert words(stack.res(stack.worker_key, action="get", id=task_id)) == (0, "CAPCHA_NOT_READY")
    info = threads_info(stack, stack.worker_key)
    assert info["working_threads"] >= info["threads"]


def test_a_2captcha_key_reads_its_own_codes() -> None:
    stack = Stack(in_php=RequestLimits(per_second=1, per_minute=60), threads=1)
    stack.submit(stack.worker_key)
    assert words(stack.submit(stack.worker_key)) == (0, "MAX_USER_TURN")
    stack.now += 1
    assert words(stack.submit(stack.worker_key)) == (0, "ERROR_NO_SLOT_AVAILABLE")


def test_a_token_bound_to_a_user_agent_is_served_with_it_and_in_result() -> None:
    stack = Stack(dialect=Dialect.CAPTCHAAI)
    task_id = str(stack.submit(stack.worker_key, enterprise="1").task_id)
    stack.solve(task_id, user_agent="Mozilla/5.0 solver")
    outcome = stack.res(stack.worker_key, action="get", id=task_id, json="1")
    assert json.loads(outcome.answer.render(as_json=True)) == {
        "status": 1,
        "request": TOKEN,
        "result": TOKEN,
        "user_agent": "Mozilla/5.0 solver",
    }


def test_a_thread_freed_right_after_a_busy_answer_still_reads_busy_in_threadsinfo() -> None:
    # CaptchaAI's SDK asks threadsinfo right after ERROR_ZERO_BALANCE: "not full" there makes it
    # raise "no active plan" instead of retrying.
    stack = Stack(dialect=Dialect.CAPTCHAAI, threads=1)
    first = str(stack.submit(stack.worker_key).task_id)
    assert stack.submit(stack.worker_key).event is Event.THREADS_BUSY
    stack.solve(first)
    stack.res(stack.worker_key, action="get", id=first)
    info = threads_info(stack, stack.worker_key)
    assert info["working_threads"] >= info["threads"]
    assert stack.submit(stack.worker_key).event is Event.SUBMITTED
