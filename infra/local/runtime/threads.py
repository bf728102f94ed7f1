"""The daemon threads of a local service (scheduler, queue pollers, pipe, bus, alarms): started
with it, told to stop through one event, and joined within one shared deadline."""

import threading
import time
from collections.abc import Callable
from typing import Any


class BackgroundThreads:
    def __init__(self) -> None:
        self.stopping = threading.Event()
        """Set by `stop`: every loop waits on it or checks it."""
        self._threads: list[threading.Thread] = []

    def start(self, target: Callable[..., Any], *args: Any, name: str | None = None) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, timeout: float) -> None:
        """Ask every thread to stop and wait for them, `timeout` seconds in all."""
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
