"""A background thread that runs short actions at given wall-clock times."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

Action = Callable[[], None]


class Timeline:
    """Runs each scheduled action once, in time order, on its own thread.

    Actions must be quick: they share the thread, so a slow one delays every later one.
    """

    def __init__(self, thread_name: str) -> None:
        self._events: list[tuple[float, int, Action]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def call_at(self, when: float, action: Action) -> None:
        with self._condition:
            heapq.heappush(self._events, (when, next(self._order), action))
            self._condition.notify()

    def stop(self, timeout: float) -> None:
        """Stops after the running action; actions not yet due are discarded."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
        if self._thread.ident is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while (action := self._next_due_action()) is not None:
            try:
                action()
            except Exception:
                logger.exception("scheduled simulator action failed")

    def _next_due_action(self) -> Action | None:
        with self._condition:
            while not self._stopping:
                if not self._events:
                    self._condition.wait()
                    continue
                wait_seconds = self._events[0][0] - time.time()
                if wait_seconds <= 0:
                    return heapq.heappop(self._events)[2]
                self._condition.wait(wait_seconds)
            return None
