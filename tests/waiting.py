"""Waiting in tests for something that happens on another thread or in another process."""

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any


def wait_until(condition: Callable[[], Any], timeout: float, interval: float = 0.2) -> Any:
    """Polls `condition` until it returns something truthy, and returns that; fails the test
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def run_at_once[T](count: int, call: Callable[[], T], timeout: float = 30) -> list[T]:
    """Runs `call` on `count` threads released together; the results of all of them. Fails the
    test when a thread raised or did not finish within `timeout`."""
    barrier = threading.Barrier(count)
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(call())
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if errors:
        kinds = dict(Counter(f"{type(error).__name__}: {error}" for error in errors))
        raise AssertionError(f"{len(errors)} of {count} threads raised: {kinds}") from errors[0]
    if len(results) != count:
        raise AssertionError(f"only {len(results)} of {count} threads finished in {timeout}s")
    return results


def each_at_once[T](items: Sequence[T], check: Callable[[T], None], timeout: float = 30) -> None:
    """Runs `check` for every item on a thread of its own, all released together; fails the
    test naming each item whose check raised or did not finish within `timeout`, with why."""
    barrier = threading.Barrier(len(items))
    failures: dict[int, str] = {}

    def run(index: int) -> None:
        barrier.wait()
        try:
            check(items[index])
        except BaseException as error:
            failures[index] = f"{type(error).__name__}: {error}"

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(items))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    for index, thread in enumerate(threads):
        if thread.is_alive():
            failures.setdefault(index, f"not finished in {timeout} s")
    assert not failures, "\n".join(f"{items[i]!r}: {why}" for i, why in sorted(failures.items()))
