"""Issue 33, fresh from the first task: a poller invocation a submit starts (woken) that finds
another sweeping takes over when that one stops; a scheduled one gives way (waiting, it would
complete no invocation: the poller-not-running alarm counts completions)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from pingback_guard.domain.lease import PollerStart
from pingback_guard.domain.task import NewTask
from pingback_guard.logic.poll_schedule import KEEP_SWEEPING_AFTER_WORK_SECONDS, SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.sweep_report import SweepReport
from tests.fakes import RECAPTCHA_REQUEST, UNIT_POLL_POLICY, FakeProvider, InMemoryTaskStore

T0 = 1000.0
TIMEOUT = 70.0  # PollerFunction's
POLICY = dataclasses.replace(
    UNIT_POLL_POLICY, run_seconds=55, sweep_interval_seconds=5, backoff_base_seconds=5
)


class Invocation:
    """One poller invocation on a fake clock that starts at ``started``; ``meanwhile`` is told
    each moment a sleep ends at, and may change the store then (another invocation's doing)."""

    def __init__(
        self,
        store: InMemoryTaskStore,
        provider: FakeProvider,
        started: float,
        meanwhile: Callable[[float], None] = lambda _now: None,
    ) -> None:
        self.moments = [started]
        self._started = started
        self._meanwhile = meanwhile
        self.service = PollerService(
            store,
            provider,
            POLICY,
            SolveTimes(default_seconds=20),
            clock=lambda: self.moments[-1],
            sleep=self._sleep,
        )

    def run(self, start: PollerStart) -> SweepReport:
        return self.service.run(self._remaining, start=start)

    def _remaining(self) -> float:
        return TIMEOUT - (self.moments[-1] - self._started)

    def _sleep(self, seconds: float) -> None:
        self.moments.append(self.moments[-1] + seconds)
        self._meanwhile(self.moments[-1])


def woken_holder(store: InMemoryTaskStore, started: float) -> Callable[[float], None]:
    """A woken invocation that took the lease at ``started`` (to its Lambda deadline) and gives
    it back when its 55 s of sweeps end; what it does meanwhile is not this test's."""
    store.acquire_poller_lease("woken", now=started, until=started + TIMEOUT)
    stops_at = started + POLICY.run_seconds

    def meanwhile(now: float) -> None:
        if now >= stops_at:
            store.release_poller_lease("woken", now=stops_at, solve_samples={}, busy_at=started)

    return meanwhile


def test_a_woken_invocation_takes_over_when_the_holder_stops() -> None:
    """Given an invocation sweeping since T0, and a task first due at T0 + 60, when a woken
    invocation comes at T0 + 30, then it waits for the holder to stop at T0 + 55, takes the
    lease and checks the task when due, not at the schedule's next minute."""
    store = InMemoryTaskStore()
    store.record_submission(NewTask("1", RECAPTCHA_REQUEST, T0 + 40, T0 + 60))
    provider = FakeProvider(answers={"1": "03AFcWeA5token"})
    woken = Invocation(store, provider, T0 + 30, meanwhile=woken_holder(store, T0))
    report = woken.run(PollerStart.WOKEN)
    assert report.lease_busy == 0 and report.recovered == 1
    assert woken.moments[1] == T0 + POLICY.run_seconds  # its first sweep: the hand-over
    # asked once, in the first sweep after the task came due (T0 + 60)
    recovered = store.get("1")
    assert provider.requests == [["1"]] and recovered is not None
    assert recovered.received_at == T0 + 60


@pytest.mark.parametrize("start", [PollerStart.SCHEDULED, PollerStart.ALONE])
def test_a_scheduled_or_operators_invocation_gives_way_to_the_holder(start: PollerStart) -> None:
    """A scheduled one waiting out the holder would complete no invocation meanwhile (the
    poller-not-running alarm counts completions)."""
    store = InMemoryTaskStore()
    other = Invocation(store, FakeProvider(), T0 + 30, meanwhile=woken_holder(store, T0))
    report = other.run(start)
    assert (report.lease_busy, report.sweeps, other.moments) == (1, 0, [T0 + 30])


def test_a_holder_that_stops_after_this_invocation_would_is_not_waited_for() -> None:
    """Given a holder whose sweeps end after this invocation's last one could start, then this
    invocation ends at once: waiting would cost its whole run for no sweep."""
    store = InMemoryTaskStore()
    store.acquire_poller_lease("later", now=T0, until=T0 + 200)
    woken = Invocation(store, FakeProvider(), T0)
    report = woken.run(PollerStart.WOKEN)
    assert (report.lease_busy, report.sweeps, woken.moments) == (1, 0, [T0])


def test_a_woken_invocation_sweeps_to_its_end_and_says_the_stack_is_busy_at_once() -> None:
    """Given a fresh stack (nothing due yet: the task just recorded may not be in the index),
    when a woken invocation runs, then the lease item says busy from its start (a submit then
    starts no other) and it sweeps every interval until its end."""
    store = InMemoryTaskStore()
    busy_seen: list[object] = []
    woken = Invocation(
        store, FakeProvider(), T0, meanwhile=lambda _now: busy_seen.append(store.lease["busy_at"])
    )
    report = woken.run(PollerStart.WOKEN)
    assert busy_seen[0] == T0
    assert report.sweeps == 12 and woken.moments[-1] == T0 + POLICY.run_seconds
    assert store.lease["busy_at"] == T0 and store.lease["until"] == T0 + POLICY.run_seconds


@pytest.mark.parametrize(
    ("last_work", "said_during_the_run"),
    [(T0 - KEEP_SWEEPING_AFTER_WORK_SECONDS, T0), (T0 - 60, T0 - 60)],
    ids=["idle stack", "busy stack"],
)
def test_a_holder_says_busy_at_once_only_when_the_stack_was_idle(
    last_work: float, said_during_the_run: float
) -> None:
    """The lease item is written when a holder first has work on an idle stack; on a busy
    stack only when the lease is given back, as before."""
    store = InMemoryTaskStore()
    store.acquire_poller_lease("earlier", now=last_work, until=last_work + 1)
    store.release_poller_lease("earlier", now=last_work, solve_samples={}, busy_at=last_work)
    store.record_submission(NewTask("1", RECAPTCHA_REQUEST, T0 - 30, T0))
    seen: list[object] = []
    scheduled = Invocation(
        store, FakeProvider(), T0, meanwhile=lambda _now: seen.append(store.lease["busy_at"])
    )
    scheduled.run(PollerStart.SCHEDULED)
    assert seen[0] == said_during_the_run
    # and given back with the last sweep that had work
    assert float(store.lease["busy_at"]) > T0  # type: ignore[arg-type]
