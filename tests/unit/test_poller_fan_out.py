"""Issue 33, the nets scale out with load: while one poller invocation's sweeps need more than
half its CPU, it starts helpers, each sweeping a group of the due index's shards under its own
lease; the main holder sweeps every group no helper holds. Below the load nothing is started.
Issue 42: work that is behind (a sweep out of budget, a due task left waiting, a sweep longer
than the interval) is load whatever the CPU, so a 1,769 MB poller fans out on a backlog too."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pytest

from pingback_guard.data.due_index import due_shard_of
from pingback_guard.domain.errors import PollerWakeError
from pingback_guard.domain.lease import HelperLoad, PollerStart, helper_group_of
from pingback_guard.domain.task import CaptchaRequest, NewTask
from pingback_guard.logic.poll_schedule import PollPolicy, SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.poller_fan_out import (
    BEHIND_AFTER_INTERVALS,
    HELPER_START_QUIET_SECONDS,
    FanOutPolicy,
    PollerFanOut,
)
from pingback_guard.logic.sweep_report import SweepReport
from pingback_guard.provider.answers import ProviderAnswer
from tests.fakes import (
    RECAPTCHA_REQUEST,
    UNIT_POLL_POLICY,
    FakePollerWaker,
    FakeProvider,
    InMemoryTaskStore,
)

T0 = 1000.0
TIMEOUT = 70.0
POLICY = dataclasses.replace(
    UNIT_POLL_POLICY, run_seconds=55, sweep_interval_seconds=5, backoff_base_seconds=5
)
# A task id in each of the 8 due shards.
IN_SHARD = {
    0: "70000000007",
    1: "70000000003",
    2: "70000000004",
    3: "70000000014",
    4: "70000000005",
    5: "70000000001",
    6: "70000000006",
    7: "70000000002",
}


class Invocation:
    """One poller invocation on a fake clock whose sweeps each cost ``cpu_per_sweep`` seconds
    of CPU at a 1,769 MB function's full vCPU (so the load is that many seconds)."""

    def __init__(
        self,
        store: InMemoryTaskStore,
        provider: FakeProvider,
        starter: FakePollerWaker,
        *,
        cpu_per_sweep: float,
        helpers: int = 7,
        meanwhile: Callable[[float], None] = lambda _now: None,
        policy: PollPolicy = POLICY,
    ) -> None:
        """``meanwhile`` is told each moment a sleep ends at: another invocation's doing."""
        self.moments = [T0]
        self._meanwhile = meanwhile
        self._cpu = 0.0
        self._reads = 0
        self._cpu_per_sweep = cpu_per_sweep
        self.fan_out = PollerFanOut(
            store, FanOutPolicy.for_memory(helpers, 1769), starter, policy.sweep_interval_seconds
        )
        self.service = PollerService(
            store,
            provider,
            policy,
            SolveTimes(default_seconds=20),
            clock=lambda: self.moments[-1],
            sleep=self._sleep,
            fan_out=self.fan_out,
            cpu_clock=self._cpu_clock,
        )

    def _sleep(self, seconds: float) -> None:
        self.moments.append(self.moments[-1] + seconds)
        self._meanwhile(self.moments[-1])

    def _cpu_clock(self) -> float:
        """Read before and after each sweep: one step apart, and the sweep lasted as long (its
        CPU is all it waited for)."""
        self._cpu += self._cpu_per_sweep
        self._reads += 1
        if self._reads % 2 == 0:
            self.moments.append(self.moments[-1] + self._cpu_per_sweep)
        return self._cpu

    def run(
        self, start: PollerStart = PollerStart.SCHEDULED, group: int | None = None
    ) -> SweepReport:
        return self.service.run(self._remaining, start=start, group=group)

    def _remaining(self) -> float:
        return TIMEOUT - (self.moments[-1] - T0)


def due_in_every_shard(store: InMemoryTaskStore, *, due_for: float = 0.0) -> None:
    for task_id in IN_SHARD.values():
        store.record_submission(NewTask(task_id, RECAPTCHA_REQUEST, T0 - 60, T0 - due_for))


def answers_for_all() -> FakeProvider:
    return FakeProvider(answers=dict.fromkeys(IN_SHARD.values(), "03AFcWeA5token"))


def checked_ids(provider: FakeProvider) -> set[str]:
    return {task_id for request in provider.requests for task_id in request}


def test_the_task_ids_here_are_in_the_shards_they_name() -> None:
    assert {int(due_shard_of(task_id, 8)) for task_id in IN_SHARD.values()} == set(range(8))
    assert {shard: int(due_shard_of(task_id, 8)) for shard, task_id in IN_SHARD.items()} == {
        shard: shard for shard in IN_SHARD
    }


def test_a_loaded_main_holder_starts_a_helper_for_every_group_once_per_quiet_time() -> None:
    """Given sweeps that need 4 s of a 5 s interval, when the main holder runs, then it starts
    helpers 1..7 at its first sweep, and again only after HELPER_START_QUIET_SECONDS for
    groups that still have no helper (these fake ones never take their lease)."""
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    starter = FakePollerWaker()
    invocation = Invocation(store, answers_for_all(), starter, cpu_per_sweep=4.0)
    report = invocation.run()
    first = starter.helper_groups[:7]
    assert first == [1, 2, 3, 4, 5, 6, 7]
    assert report.helpers_started == len(starter.helper_groups)
    assert len(starter.helper_groups) % 7 == 0
    rounds = len(starter.helper_groups) // 7
    assert 1 < rounds <= 1 + POLICY.run_seconds // HELPER_START_QUIET_SECONDS


def test_a_main_holder_below_the_load_starts_no_helper_and_sweeps_every_shard() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    starter = FakePollerWaker()
    provider = answers_for_all()
    report = Invocation(store, provider, starter, cpu_per_sweep=1.0).run()
    assert starter.helper_groups == [] and report.helpers_started == 0
    assert checked_ids(provider) == set(IN_SHARD.values())


def test_the_main_holder_leaves_a_helpers_shards_to_it() -> None:
    """Given helper 3 holds its group's lease, when the main holder sweeps, then it checks the
    tasks of every shard but 3."""
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    assert store.acquire_helper_lease(3, "helper-3", T0, T0 + TIMEOUT)
    provider = answers_for_all()
    Invocation(store, provider, FakePollerWaker(), cpu_per_sweep=1.0).run()
    assert checked_ids(provider) == set(IN_SHARD.values()) - {IN_SHARD[3]}


def test_a_helpers_load_keeps_the_main_holder_fanned_out() -> None:
    """Given a helper whose last sweep needed 3 s, the main holder's own 1 s sweeps are enough
    to start the other groups' helpers: the load is the work of all of them."""
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    assert store.acquire_helper_lease(1, "helper-1", T0, T0 + TIMEOUT)
    store.record_helper_load(1, "helper-1", 3.0)
    starter = FakePollerWaker()
    Invocation(store, answers_for_all(), starter, cpu_per_sweep=1.0).run()
    assert starter.helper_groups[:6] == [2, 3, 4, 5, 6, 7]


def test_a_helper_sweeps_only_its_group_records_its_load_and_gives_its_lease_back() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    provider = answers_for_all()
    invocation = Invocation(store, provider, FakePollerWaker(), cpu_per_sweep=2.0)
    report = invocation.run(PollerStart.HELPER, group=5)
    assert checked_ids(provider) == {IN_SHARD[5]}
    assert report.recovered == 1
    lease = store.helper_leases[5]
    assert lease["holder"] != "" and float(lease["until"]) <= invocation.moments[-1]  # type: ignore[arg-type]
    assert store.lease == {}  # the main lease is not a helper's


def test_a_helper_gives_way_to_a_holder_of_its_group() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    assert store.acquire_helper_lease(2, "other", T0, T0 + TIMEOUT)
    provider = answers_for_all()
    report = Invocation(store, provider, FakePollerWaker(), cpu_per_sweep=2.0).run(
        PollerStart.HELPER, group=2
    )
    assert report.lease_busy == 1 and provider.requests == []


def test_a_helper_that_cannot_be_started_is_counted_and_its_shards_are_swept_by_the_main() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    starter = FakePollerWaker(
        failure=lambda: PollerWakeError("Invoke refused: TooManyRequestsException")
    )
    provider = answers_for_all()
    report = Invocation(store, provider, starter, cpu_per_sweep=4.0).run()
    assert report.helper_start_failed >= 7 and report.helpers_started == 0
    assert checked_ids(provider) == set(IN_SHARD.values())


def test_with_no_helpers_the_main_holder_never_reads_helper_leases() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    reads: list[int] = []
    live = store.live_helpers

    def counted(groups: int, now: float) -> dict[int, HelperLoad]:
        reads.append(groups)
        return live(groups, now)

    store.live_helpers = counted  # type: ignore[method-assign]
    Invocation(store, answers_for_all(), FakePollerWaker(), cpu_per_sweep=4.0, helpers=0).run()
    assert reads == []


def test_the_main_holder_writes_its_held_checks_of_a_shard_a_helper_takes() -> None:
    """Given the main holder holds next checks in memory for tasks of every shard, when helper 4
    takes its group meanwhile, then the main holder writes its next check for shard 4's task
    before leaving it to the helper (who reads it from the table)."""
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    provider = FakeProvider(answers={})  # nothing ready: every check is held for later

    def helper_takes_group_4(now: float) -> None:
        if now - T0 >= 10 and 4 not in store.helper_leases:
            store.acquire_helper_lease(4, "helper-4", now, T0 + 200)

    Invocation(
        store, provider, FakePollerWaker(), cpu_per_sweep=1.0, meanwhile=helper_takes_group_4
    ).run()
    assert IN_SHARD[4] in store.rescheduled
    shard_4_checks = [request for request in provider.requests if IN_SHARD[4] in request]
    assert 0 < len(shard_4_checks) <= 3  # checked while the main holder swept shard 4 only


def test_cpu_beyond_the_functions_share_is_not_load() -> None:
    """Given a 256 MB function (a seventh of a vCPU), a sweep's CPU counts at seven times its
    seconds, but never for longer than the sweep lasted: a process with more CPU than Lambda
    gives (the local stack) is not loaded by the difference."""
    policy = FanOutPolicy.for_memory(7, 256)
    assert policy.load_seconds(0.1, wall_seconds=5.0) == pytest.approx(0.1 * 1769 / 256)
    assert policy.load_seconds(0.1, wall_seconds=0.2) == 0.2


LIGHT_CPU = 0.01
"""A sweep's CPU at 1,769 MB far below the load: only a backlog can fan it out."""


def test_a_sweep_stopped_at_its_request_budget_fans_out_whatever_its_cpu() -> None:
    """Given one request a sweep and a due task in every shard, when the main holder sweeps
    with hardly any CPU, then the sweep is out of budget, so it starts every helper."""
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    starter = FakePollerWaker()
    one_request = dataclasses.replace(POLICY, max_requests_per_sweep=1)
    invocation = Invocation(
        store, FakeProvider(answers={}), starter, cpu_per_sweep=LIGHT_CPU, policy=one_request
    )
    report = invocation.run()
    assert report.budget_exhausted > 0
    assert starter.helper_groups[:7] == [1, 2, 3, 4, 5, 6, 7]


def test_a_due_task_left_waiting_fans_out_whatever_the_cpu() -> None:
    """Given tasks that a second sweep finds due for longer than BEHIND_AFTER_INTERVALS sweep
    intervals (the sweeps before it could not reach them), the main holder starts every
    helper. An invocation's first sweep is not judged: it catches up on what the last holder
    left."""
    store = InMemoryTaskStore()
    due_in_every_shard(store)
    late = (BEHIND_AFTER_INTERVALS + 1) * POLICY.sweep_interval_seconds

    def left_waiting(now: float) -> None:
        if "late" not in store.tasks:
            store.record_submission(NewTask("late", RECAPTCHA_REQUEST, now - 60, now - late))

    starter = FakePollerWaker()
    invocation = Invocation(
        store, FakeProvider(answers={}), starter, cpu_per_sweep=LIGHT_CPU, meanwhile=left_waiting
    )
    report = invocation.run()
    assert report.oldest_due_seconds == late
    assert starter.helper_groups[:7] == [1, 2, 3, 4, 5, 6, 7]


def test_an_invocations_first_sweep_is_not_judged() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store, due_for=(BEHIND_AFTER_INTERVALS + 1) * 5.0)
    starter = FakePollerWaker()
    report = Invocation(store, answers_for_all(), starter, cpu_per_sweep=LIGHT_CPU).run()
    assert report.recovered == len(IN_SHARD) and starter.helper_groups == []


def test_tasks_due_since_the_last_sweep_are_not_a_backlog() -> None:
    store = InMemoryTaskStore()
    due_in_every_shard(store, due_for=POLICY.sweep_interval_seconds)
    starter = FakePollerWaker()
    Invocation(store, answers_for_all(), starter, cpu_per_sweep=LIGHT_CPU).run()
    assert starter.helper_groups == []


@pytest.mark.parametrize(
    ("behind", "wall_seconds"),
    [
        (SweepReport(budget_exhausted=1), 1.0),
        (SweepReport(), 5.5),  # held by its requests' pace past the 5 s interval
        (SweepReport(oldest_due_seconds=10.5), 1.0),
    ],
)
def test_a_sweep_behind_needs_a_whole_interval_whatever_its_cpu(
    behind: SweepReport, wall_seconds: float
) -> None:
    fan_out = PollerFanOut(
        InMemoryTaskStore(), FanOutPolicy.for_memory(7, 1769), FakePollerWaker(), 5.0
    )
    assert fan_out.sweep_load(0.01, wall_seconds, behind) == max(5.0, 0.01)
    assert fan_out.sweep_load(0.01, 1.0, SweepReport()) == 0.01


def test_a_fan_out_event_names_a_group_of_this_deployment_or_none() -> None:
    event = {"source": PollerStart.HELPER.value, "group": 3}
    assert PollerStart.of(event) is PollerStart.HELPER
    assert helper_group_of(event, 7) == 3
    for group in (0, 8, "3", True, None, 2.0):
        assert helper_group_of({"source": PollerStart.HELPER.value, "group": group}, 7) is None
    assert helper_group_of({"group": 3}, 2) is None


def test_a_sweep_asks_for_one_interval_at_most() -> None:
    """Given requests that each take 1 s, one at a time, and more due tasks than a 5 s interval
    can ask about, when the main holder sweeps, then the sweep stops asking after the interval
    (out of its budget), leaving the rest due for the next sweep, and its load starts helpers."""
    store = InMemoryTaskStore()
    image = CaptchaRequest("base64", {"phrase": "1"})  # one id per request
    for number in range(20):
        store.record_submission(NewTask(f"img-{number}", image, T0 - 60, T0))
    moments = [T0]

    class SlowProvider(FakeProvider):
        def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
            moments.append(moments[-1] + 1.0)
            return super().get_results(task_ids)

    one_at_a_time = dataclasses.replace(POLICY, request_workers=1, max_requests_per_sweep=100)
    service = PollerService(
        store,
        SlowProvider(answers={}),
        one_at_a_time,
        SolveTimes(default_seconds=20),
        clock=lambda: moments[-1],
    )
    report = service.sweep(T0, remaining_seconds=lambda: 60.0)
    assert report.budget_exhausted == 1
    assert POLICY.sweep_interval_seconds <= report.requests < 20
