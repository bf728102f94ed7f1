"""When a submit starts the poller: the task it just recorded would otherwise wait for the
schedule's next invocation (up to a minute) if no invocation sweeps.

An invocation sweeps on through the next scheduled one while the stack is busy (its lease item
says a holder had work within KEEP_SWEEPING_AFTER_WORK_SECONDS) and the lease is held or was
given back a moment ago: then the new task is checked when due, and nothing is started. Else
(a fresh stack, one idle for longer, or a holder about to stop after one idle sweep) one poller
invocation is started; it takes the lease, or takes over from the holder when that one stops,
and marks the stack busy, so the schedule's next invocations sweep on after it. At most one
start per process per WAKE_QUIET_SECONDS (longer than a lease read is kept, so a started
invocation's lease is seen before the next start); a second invocation started meanwhile by
another process finds the lease taken.

A start that fails (throttled, refused, unreachable) or a lease that cannot be read never fails
the submit: the task is recorded, and the schedule is the net.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from pingback_guard.domain.errors import PollerWakeError, StoreError
from pingback_guard.logic.get_task import POLLER_STATE_KEPT_SECONDS, PollerWatch
from pingback_guard.wake.poller import PollerWaker

WAKE_QUIET_SECONDS = 2 * POLLER_STATE_KEPT_SECONDS


class PollerWake:
    def __init__(
        self,
        watch: PollerWatch,
        waker: PollerWaker,
        *,
        clock: Callable[[], float] = time.time,
        on_woken: Callable[[], None] = lambda: None,
        on_failed: Callable[[str], None] = lambda _reason: None,
    ) -> None:
        self._watch = watch
        self._waker = waker
        self._clock = clock
        self._on_woken = on_woken
        self._on_failed = on_failed
        self._quiet_until = -math.inf

    def after_submit(self) -> bool:
        """Start the poller unless one sweeps on (called once a task is recorded): True when a
        start was asked for and accepted. Never raises."""
        now = self._clock()
        if now < self._quiet_until:
            return False
        try:
            if self._watch.sweeping_on(now):
                return False
        except StoreError:
            pass  # unknown: a start costs one invocation that finds the lease taken at worst
        self._quiet_until = now + WAKE_QUIET_SECONDS
        try:
            self._waker.wake()
        except PollerWakeError as error:
            self._on_failed(str(error))
            return False
        self._on_woken()
        return True
