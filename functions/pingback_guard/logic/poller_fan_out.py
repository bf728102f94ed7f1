"""When one poller invocation is not enough: helper invocations, each sweeping a group of the
due index's shards under that group's own lease.

A Lambda invocation's CPU is its memory's share of a vCPU (one vCPU at 1,769 MB:
https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html). At the default 256 MB
that is about a seventh of a vCPU, enough for about a dozen tasks a second with every pingback
lost; past that one invocation's sweeps stretch and its backlog passes the provider's retention.
So the main lease holder measures each sweep's load, and while it and its helpers between them
need more than FAN_OUT_LOAD_SHARE of a sweep interval, starts a helper for every group no
invocation holds (an asynchronous Invoke of its own function, at most once per group
per HELPER_START_QUIET_SECONDS). Group g (1..helpers) owns the shards s with s mod (helpers + 1)
= g; the main holder sweeps group 0 and every group no helper holds, so a helper that does not
start, fails or ends leaves nothing unswept. Each helper sweeps for its run like the main holder
(from its first task to its end) and keeps its last sweep's load in its lease item, which the
main holder reads each sweep; one still over the load as it ends starts its group's next
helper. Below the load, nothing is started: a quiet stack runs one invocation, as before.

A sweep's load is its CPU time over its share (the time the work takes with nothing to wait for,
at most the sweep's own duration), or a whole sweep interval when the work is behind, whatever
its CPU: the sweep stopped at its request budget, lasted longer than the
interval (held by its requests' pace: at 1,769 MB one invocation's CPU is never half busy, yet
64 requests in flight at 0.2-1 s each check about 100 a second), or found a due task waiting
for longer than BEHIND_AFTER_INTERVALS intervals. So no parameter, memory included, keeps a
backlog from fanning out; PollerHelpers 0 (or DueShards 1) is the one way to sweep alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import PollerWakeError, StoreError
from pingback_guard.logic.sweep_report import SweepReport

FAN_OUT_LOAD_SHARE = 0.5
# Helpers are started for this long after the last sweep over the load: a helper's run is
# about a minute, so the groups stay with their helpers through a load that holds.
FAN_OUT_HOLD_SECONDS = 60.0
# A helper's start is asynchronous: its lease shows in the group's item a moment later.
HELPER_START_QUIET_SECONDS = 10.0
MB_PER_VCPU = 1769
# A due task found by a sweep is at most an interval late when the sweeps keep up (it came due
# after the last one); one two intervals late was left by a sweep that could not reach it.
BEHIND_AFTER_INTERVALS = 2.0


class HelperStarter(Protocol):
    def start_helper(self, group: int) -> None:
        """Start one helper invocation for ``group``; raises PollerWakeError when not accepted."""


@dataclass(frozen=True)
class FanOutPolicy:
    helpers: int
    """PollerHelpers: helper groups at most (0: the main holder sweeps alone)."""
    vcpu_share: float
    """The function's share of a vCPU (its memory over MB_PER_VCPU)."""

    @classmethod
    def for_memory(cls, helpers: int, memory_mb: int) -> FanOutPolicy:
        return cls(helpers, memory_mb / MB_PER_VCPU)

    def load_seconds(self, cpu_seconds: float, wall_seconds: float) -> float:
        """The sweep's CPU time at the function's share of a vCPU, never more than the sweep
        lasted: a process given more than its share (a developer's machine, the local stack)
        is not loaded by the difference."""
        return min(cpu_seconds / self.vcpu_share, wall_seconds)

    def group_of(self, shard: int) -> int:
        return shard % (self.helpers + 1)

    def shards_of(self, groups: Collection[int], shard_count: int) -> frozenset[int]:
        return frozenset(shard for shard in range(shard_count) if self.group_of(shard) in groups)


class PollerFanOut:
    """The main holder's side: which shards its next sweep covers, and which helpers to start."""

    def __init__(
        self,
        store: TaskStore,
        policy: FanOutPolicy,
        starter: HelperStarter,
        sweep_interval_seconds: float,
        *,
        on_start_failed: Callable[[str], None] = lambda _reason: None,
    ) -> None:
        self._store = store
        self._policy = policy
        self._starter = starter
        self._sweep_interval = sweep_interval_seconds
        self._on_start_failed = on_start_failed
        self._fan_out_until = -math.inf
        self._started_at: dict[int, float] = {}

    @property
    def policy(self) -> FanOutPolicy:
        return self._policy

    def sweep_load(self, cpu_seconds: float, wall_seconds: float, swept: SweepReport) -> float:
        """The seconds of a sweep interval the sweep's work needs: a whole interval at least
        when it is behind."""
        load = self._policy.load_seconds(cpu_seconds, wall_seconds)
        if self.behind(swept, wall_seconds):
            return max(load, self._sweep_interval)
        return load

    def behind(self, swept: SweepReport, wall_seconds: float) -> bool:
        """The sweep left due work it could not do in time. (An invocation's last sweep stops
        at its deadline as a rule: the due tasks it leaves count by their age in its
        successor's first sweep.)"""
        return (
            swept.budget_exhausted > 0
            or wall_seconds > self._sweep_interval
            or swept.oldest_due_seconds > BEHIND_AFTER_INTERVALS * self._sweep_interval
        )

    def main_scope(self, now: float, own_load: float, report: SweepReport) -> frozenset[int] | None:
        """The shards the main holder sweeps next (None: all of them)."""
        helpers = self._policy.helpers
        if not helpers:
            return None
        try:
            live = self._store.live_helpers(helpers, now)
        except StoreError:
            report.store_errors += 1
            return None  # unknown: sweeping every shard loses nothing
        load = own_load + sum(helper.load_seconds for helper in live.values())
        if load > FAN_OUT_LOAD_SHARE * self._sweep_interval:
            self._fan_out_until = now + FAN_OUT_HOLD_SECONDS
        if now < self._fan_out_until:
            self._start_helpers(now, set(live), report)
        if not live:
            return None
        unheld = {0} | {group for group in range(1, helpers + 1) if group not in live}
        return self._policy.shards_of(unheld, self._store.due_shard_count())

    def helper_ended(self, group: int, load: float, report: SweepReport) -> None:
        """A helper whose last sweep was still over the load starts its group's next helper as
        it ends (its lease given back): helpers started together end together, and the main
        holder, left every group at once, restarted them only after its own stretched sweep."""
        if load > FAN_OUT_LOAD_SHARE * self._sweep_interval:
            self._start(group, report)

    def helper_scope(self, group: int) -> frozenset[int]:
        return self._policy.shards_of({group}, self._store.due_shard_count())

    def _start_helpers(self, now: float, live: set[int], report: SweepReport) -> None:
        # Groups without a shard (more helpers than shards) have nothing to sweep.
        shard_count = self._store.due_shard_count()
        for group in range(1, min(self._policy.helpers, shard_count - 1) + 1):
            started = self._started_at.get(group, -math.inf)
            if group in live or now - started < HELPER_START_QUIET_SECONDS:
                continue
            self._started_at[group] = now
            self._start(group, report)

    def _start(self, group: int, report: SweepReport) -> None:
        try:
            self._starter.start_helper(group)
        except PollerWakeError as error:
            report.helper_start_failed += 1
            self._on_start_failed(str(error))
            return
        report.helpers_started += 1
