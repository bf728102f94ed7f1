"""The concurrency helper the store contract's "exactly one wins" tests stand on: a thread that
crashes fails the test, it is not one fewer loser."""

import threading

import pytest

from tests.waiting import run_at_once


def test_every_thread_s_result_is_returned() -> None:
    assert run_at_once(4, lambda: True) == [True] * 4


def test_a_thread_that_raises_fails_the_caller_with_its_error() -> None:
    calls = iter(range(4))

    def second_one_crashes() -> bool:
        if next(calls) == 1:
            raise RuntimeError("crashed")
        return False

    with pytest.raises(AssertionError, match="1 of 4 threads raised") as raised:
        run_at_once(4, second_one_crashes)
    assert isinstance(raised.value.__cause__, RuntimeError)


def test_a_thread_that_does_not_finish_fails_the_caller() -> None:
    release = threading.Event()
    calls = iter(range(4))

    def first_one_hangs() -> bool:
        if next(calls) == 0:
            release.wait(5)
        return True

    try:
        with pytest.raises(AssertionError, match="only 3 of 4 threads finished"):
            run_at_once(4, first_one_hangs, timeout=0.5)
    finally:
        release.set()
