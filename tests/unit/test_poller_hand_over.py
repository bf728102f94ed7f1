"""Issue 33, fresh from the first task: a scheduled or woken poller invocation that finds another
sweeping claims to succeed it and takes over when that one stops; at most one waits (the rest
give way at once), and an operator's invocation gives way."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence

import pytest

from pingback_guard.domain.lease import PollerStart
from pingback_guard.domain.task import NewTask
from pingback_guard.logic.poll_schedule import KEEP_SWEEPING_AFTER_WORK_SECONDS, SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.sweep_report import SweepReport
from pingback_guard.provider.answers import ProviderAnswer
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


@pytest.mark.parametrize("start", [PollerStart.SCHEDULED, PollerStart.WOKEN])
def test_while_one_invocation_waits_to_succeed_the_holder_any_other_gives_way(
    start: PollerStart,
) -> None:
    """Given a holder sweeping since T0 and an invocation that claimed at T0 + 20 to succeed
    it, when another comes at T0 + 30, then that one gives way at once: at most one waits."""
    store = InMemoryTaskStore()
    meanwhile = woken_holder(store, T0)
    assert store.claim_poller_succession("first-claimant", T0 + 20, T0 + 70)
    other = Invocation(store, FakeProvider(), T0 + 30, meanwhile=meanwhile)
    report = other.run(start)
    assert (report.lease_busy, report.sweeps, other.moments) == (1, 0, [T0 + 30])


def test_a_scheduled_invocation_takes_over_when_the_holder_stops() -> None:
    """Given a woken holder whose minute ends at T0 + 55 and no invocation waiting, when a
    scheduled one comes at T0 + 40, then it claims to succeed it and sweeps from T0 + 55 on:
    the tasks submitted meanwhile are not left to the next minute."""
    store = InMemoryTaskStore()
    scheduled = Invocation(store, FakeProvider(), T0 + 40, meanwhile=woken_holder(store, T0))
    report = scheduled.run(PollerStart.SCHEDULED)
    assert report.lease_busy == 0 and report.sweeps >= 1
    assert scheduled.moments[1] == T0 + POLICY.run_seconds


def test_an_operators_invocation_gives_way_to_the_holder() -> None:
    store = InMemoryTaskStore()
    other = Invocation(store, FakeProvider(), T0 + 30, meanwhile=woken_holder(store, T0))
    report = other.run(PollerStart.ALONE)
    assert (report.lease_busy, report.sweeps, other.moments) == (1, 0, [T0 + 30])
    assert "successor" not in store.lease


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


class LateInvocation(Invocation):
    """Each sleep ends a little late, by turns 0.4 s and 0.1 s (a loaded CPU)."""

    def __init__(self, store: InMemoryTaskStore, provider: FakeProvider, started: float) -> None:
        super().__init__(store, provider, started)
        self._lateness = itertools.cycle([0.4, 0.1])

    def _sleep(self, seconds: float) -> None:
        super()._sleep(seconds + next(self._lateness))


def test_sweeps_fall_on_the_epoch_grid_and_a_late_sweep_keeps_its_young_checks() -> None:
    """Given an invocation that takes the lease at T0 + 2.3 and whose sleeps end late, then
    its sweeps after the first fall on the 5 s grid from the epoch (a GET's hint names them),
    and a young task checked in a sweep 0.4 s late is checked again in the next grid sweep
    (0.1 s late), not an interval after it."""
    store = InMemoryTaskStore()
    store.record_submission(NewTask("1", RECAPTCHA_REQUEST, T0 - 20, T0))
    provider = FakeProvider()
    invocation = LateInvocation(store, provider, T0 + 2.3)
    checked: list[float] = []
    ask = provider.get_results

    def timed(task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        checked.append(invocation.moments[-1])
        return ask(task_ids)

    provider.get_results = timed  # type: ignore[method-assign]
    invocation.run(PollerStart.WOKEN)
    assert [round(moment % 5, 6) for moment in invocation.moments[1:]] == [0.4, 0.1] * 5 + [0.4]
    # First at the lease (the next check then a full gap on: the grid sweep after 1007.3),
    # then in every grid sweep.
    assert checked[:4] == pytest.approx([T0 + 2.3, T0 + 10.1, T0 + 15.4, T0 + 20.1])
    assert len(checked) == 1 + len(invocation.moments[2:])
