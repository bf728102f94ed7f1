"""Waiting in tests for something that happens on another thread or in another process."""

import time
from collections.abc import Callable
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
