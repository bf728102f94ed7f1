"""The poller as Lambda runs it, on the scale section's fake clock: a scheduled invocation every
minute, each helper an asynchronous invocation the main holder starts (logic/poller_fan_out.py),
every invocation a PollerService of its own execution environment (reused warm, as Lambda does),
with its own CPU share and request workers, taking, handing over and giving back the leases in
the table model.

Each invocation runs in a thread of its own, one at a time: it runs until it sleeps (between two
sweeps, or waiting to take over), then the fleet runs whatever comes first, another invocation
or an event of the world (a submit, a pingback). A sweep is one step: the world's events during
it run after it, as in a single poller's run; each invocation's time is its own (a sweep's CPU
and requests move it on), so the fleet's clock is the running invocation's.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.scale_model import CapacityStore, SimClock
from pingback_guard.domain.lease import PollerStart
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.poller_fan_out import FanOutPolicy, PollerFanOut

INVOCATION_SECONDS = 70.0
"""PollerFunction's Timeout."""
SCHEDULE_SECONDS = 60.0
# From the main holder's asynchronous Invoke to the helper's handler running: Lambda queues the
# event and a poller of its own polls the queue (asynchronous invocation):
# https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html
HELPER_START_SECONDS = 1.0


@dataclass
class Invocation:
    start: PollerStart
    group: int | None
    began: float
    wake_at: float
    ended: float | None = None
    turn: threading.Event = field(default_factory=threading.Event)


class PollerFleet:
    """Every poller invocation of a row: scheduled, helpers, and the environments they run in."""

    def __init__(
        self,
        clock: SimClock,
        store: CapacityStore,
        new_service: Callable[[PollerFanOut], PollerService],
        fan_out_policy: FanOutPolicy,
        sweep_interval_seconds: float,
    ) -> None:
        self._clock = clock
        self._store = store
        self._new_service = new_service
        self._fan_out_policy = fan_out_policy
        self._interval = sweep_interval_seconds
        self._warm: list[PollerService] = []
        self._services: list[PollerService] = []
        self._waiting: list[tuple[float, int, Invocation]] = []
        self._order = itertools.count()
        self._yielded = threading.Event()
        self._running: Invocation | None = None
        self._failure: BaseException | None = None
        self.invocations: list[Invocation] = []

    def run(self, start: float, schedule_until: float) -> None:
        """A scheduled invocation every minute from ``start`` until ``schedule_until``, then
        until every invocation has ended."""
        schedule = start
        while schedule < schedule_until:
            self._clock.at(schedule, self._scheduled)
            schedule += SCHEDULE_SECONDS
        try:
            while self._step():
                pass
        finally:
            for service in self._services:
                service.close()

    def start_helper(self, group: int) -> None:
        """HelperStarter: an asynchronous Invoke of the function for ``group``."""
        self._invoke(PollerStart.HELPER, group, self._clock.now + HELPER_START_SECONDS)

    def sleep(self, seconds: float) -> None:
        """The running invocation waits: the fleet runs what comes before it wakes."""
        invocation = self._running
        assert invocation is not None, "only an invocation sleeps on the fleet"
        invocation.wake_at = self._clock.now + seconds
        self._park(invocation)
        invocation.turn.wait()
        invocation.turn.clear()

    def _scheduled(self, at: float) -> None:
        self._store.forget_finished()
        self._invoke(PollerStart.SCHEDULED, None, at)

    def _invoke(self, start: PollerStart, group: int | None, at: float) -> None:
        invocation = Invocation(start, group, at, at)
        self.invocations.append(invocation)
        self._park(invocation)
        threading.Thread(target=self._body, args=(invocation,), daemon=True).start()

    def _park(self, invocation: Invocation) -> None:
        heapq.heappush(self._waiting, (invocation.wake_at, next(self._order), invocation))
        if invocation is self._running:
            self._running = None
            self._yielded.set()

    def _step(self) -> bool:
        event_at = self._clock.next_event_at()
        woken_at = self._waiting[0][0] if self._waiting else None
        if event_at is None and woken_at is None:
            return False
        if woken_at is None or (event_at is not None and event_at <= woken_at):
            self._clock.run_next_event()
            return True
        _, _, invocation = heapq.heappop(self._waiting)
        self._clock.now = invocation.wake_at
        self._running = invocation
        self._yielded.clear()
        invocation.turn.set()
        self._yielded.wait()
        if self._failure is not None:
            raise self._failure
        return True

    def _body(self, invocation: Invocation) -> None:
        invocation.turn.wait()
        invocation.turn.clear()
        service = self._warm.pop() if self._warm else self._cold_service()
        deadline = invocation.began + INVOCATION_SECONDS
        try:
            service.run(
                lambda: deadline - self._clock.now, start=invocation.start, group=invocation.group
            )
        except BaseException as error:  # raised again in the fleet's thread
            self._failure = error
        invocation.ended = self._clock.now
        self._warm.append(service)
        self._running = None
        self._yielded.set()

    def _cold_service(self) -> PollerService:
        fan_out = PollerFanOut(self._store, self._fan_out_policy, self, self._interval)
        service = self._new_service(fan_out)
        self._services.append(service)
        return service

    def running_seconds(self, start: float, end: float) -> float:
        """Invocation-seconds spent between ``start`` and ``end``."""
        return sum(
            max(0.0, min(end, invocation.ended or end) - max(start, invocation.began))
            for invocation in self.invocations
        )

    def most_at_once(self) -> int:
        """The most invocations running at one moment."""
        edges = sorted(
            edge
            for invocation in self.invocations
            for edge in ((invocation.began, 1), (invocation.ended or invocation.began, -1))
        )
        running = most = 0
        for _, change in edges:
            running += change
            most = max(most, running)
        return most
