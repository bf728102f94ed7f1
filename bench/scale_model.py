"""The world the scale section runs the stack's services in: a fake clock with events, a
provider and a table that count what a real one would refuse.

The provider: res.php answers after 0.2-1 s (uniform), tasks solve as the CaptchaAI simulator
draws them (lognormal, median 25 s, scaled per kind: infra/simulator), results are kept 600 s
after they are solved, then forgotten (ERROR_WRONG_CAPTCHA_ID, as the simulator answers).

The table: the unit tests' store (tests/fakes.InMemoryTaskStore, held to the same contract as
DynamoDbTaskStore on moto and DynamoDB Local) with DynamoDB's capacity arithmetic added: write
units per 1 KB written, read units per 4 KB read (eventually consistent: half), each charged to
the partition that serves it (a task's item: one of the table's partitions by its key; a due
index entry: its shard's partition, since every entry of one shard shares one partition key).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from infra.simulator.answers import SOLVE_TIME_FACTOR
from infra.simulator.config import SolveTimeDistribution
from infra.simulator.randomness import SharedRandom
from pingback_guard.data.due_index import due_shard_of
from pingback_guard.domain.lease import HelperLoad, PollerLease
from pingback_guard.domain.task import (
    CaptchaRequest,
    DueTask,
    NewTask,
    RecordedSolution,
    StoreOutcome,
    SubmissionOutcome,
    TaskResult,
    TaskStatus,
)
from pingback_guard.provider.answers import ProviderAnswer, classify_part
from tests.fakes import InMemoryTaskStore

# DynamoDB: one partition serves at most 1,000 write and 3,000 read units a second, whatever
# the table's capacity (every due index entry of one shard shares one partition key value):
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html
# A new on-demand table sustains 4,000 writes and 12,000 reads a second at once, and up to
# double its previous peak later; its task items spread over partitions by their random keys:
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html
PARTITION_WRITE_UNITS = 1000
PARTITION_READ_UNITS = 3000
NEW_TABLE_WRITE_UNITS = 4000
NEW_TABLE_READ_UNITS = 12000
TABLE = "table"
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
# A due index entry: the task's key, shard, due time, submit time, attempts, method.
INDEX_ENTRY_BYTES = 120
RES_LATENCY_SECONDS = (0.2, 1.0)
RETENTION_SECONDS = 600.0
FORGOTTEN = "ERROR_WRONG_CAPTCHA_ID"
NOT_READY = "CAPCHA_NOT_READY"
# 2captcha blocks a key for 5 minutes when res.php requests R > 20 x uploads + 1200
# (/work/shared/DESIGN.md); counted over the last hour (the provider names no window: the
# longest one makes the constant part the smallest share, the strictest reading).
RES_PER_UPLOAD = 20
RES_ALLOWANCE = 1200
RES_WINDOW_SECONDS = 3600.0
# The poller's own CPU, measured on the 2-core bench machine (client thread CPU time, plain HTTP
# on loopback): a one-id res.php request and its parsing 1.4 ms, an ids= request of 100 tokens
# of 2.2 KB 3.3 ms, a result write with boto3 (DynamoDB Local) 2.9 ms. Lambda gives a function
# CPU in proportion to its memory (MB_PER_VCPU, the product's own constant).
REQUEST_CPU_SECONDS = 0.0014
CPU_SECONDS_PER_ID = 0.000019
WRITE_CPU_SECONDS = 0.0029


class SimClock:
    """Fake time. Sleeping runs the events due meanwhile, in time order, each told its time;
    other threads (the poller's requests) only move time on."""

    def __init__(self, start: float, vcpu_share: float) -> None:
        self.now = start
        self.in_event = False
        self._vcpu_share = vcpu_share
        self.poller_cpu_seconds = 0.0
        self.poller_cpu_by_second: defaultdict[int, float] = defaultdict(float)
        self._events: list[tuple[float, int, Callable[[float], None]]] = []
        self._order = itertools.count()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def at(self, when: float, action: Callable[[float], None]) -> None:
        heapq.heappush(self._events, (when, next(self._order), action))

    def pass_time(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def poller_cpu(self, seconds: float) -> None:
        """The poller's threads share its CPU: its work takes that CPU time over its share."""
        if self.in_event:
            return  # another function's work (a submit, a pingback)
        with self._lock:
            self.poller_cpu_seconds += seconds
            self.poller_cpu_by_second[int(self.now)] += seconds
            self.now += seconds / self._vcpu_share

    def sleep(self, seconds: float) -> None:
        self.run_until(self.now + seconds)

    def next_event_at(self) -> float | None:
        return self._events[0][0] if self._events else None

    def run_next_event(self) -> None:
        """The earliest event, at its time (the fleet's clock is then the world's)."""
        moment, _, action = heapq.heappop(self._events)
        self.now = moment
        self.in_event = True
        try:
            action(moment)
        finally:
            self.in_event = False

    def run_until(self, when: float) -> None:
        while self._events and self._events[0][0] <= when:
            moment, _, action = heapq.heappop(self._events)
            self.in_event = True
            try:
                action(moment)
            finally:
                self.in_event = False
        with self._lock:
            self.now = max(self.now, when)


@dataclass
class ProviderTask:
    method: str
    finished_at: float
    code: str


class ProviderModel:
    """res.php as the poller meets it; in.php is the submit's, counted as uploads."""

    def __init__(self, clock: SimClock, seed: int, request_workers: float) -> None:
        """``request_workers``: requests in flight at once (a slice's share of them)."""
        self._clock = clock
        self._random = random.Random(seed)
        self._solve = SharedRandom(seed)
        self._distribution = SolveTimeDistribution()
        self._request_workers = request_workers
        self._ids = itertools.count(70_000_000_001)
        self.tasks: dict[str, ProviderTask] = {}
        self.uploads_by_second: Counter[int] = Counter()
        self.requests_by_second: Counter[int] = Counter()
        self.checks: Counter[str] = Counter()
        """res.php checks of each task (a paced worker looks when the stack checks)."""
        self._lock = threading.Lock()

    def upload(self, method: str, at: float) -> str:
        task_id = str(next(self._ids))
        solve = self._distribution.draw(self._solve) * SOLVE_TIME_FACTOR.get(method, 1.0)
        self.tasks[task_id] = ProviderTask(method, at + solve, f"answer-{task_id}")
        self.uploads_by_second[int(at)] += 1
        return task_id

    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        return self.upload(request.method, self._clock())

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        """One request; up to request_workers are in flight, so each takes the poller's time
        its latency over them."""
        with self._lock:
            latency = self._random.uniform(*RES_LATENCY_SECONDS)
            self.checks.update(task_ids)
        self._clock.pass_time(latency / self._request_workers)
        self._clock.poller_cpu(REQUEST_CPU_SECONDS + CPU_SECONDS_PER_ID * len(task_ids))
        now = self._clock()
        with self._lock:
            self.requests_by_second[int(now)] += 1
        return {task_id: classify_part(self._answer(task_id, now)) for task_id in task_ids}

    def _answer(self, task_id: str, now: float) -> str:
        task = self.tasks.get(task_id)
        if task is None or now > task.finished_at + RETENTION_SECONDS:
            return FORGOTTEN
        return task.code if now >= task.finished_at else NOT_READY

    def report(self, task_id: str, *, good: bool) -> None:
        return None

    def balance(self) -> float:
        return 1000.0

    def worst_request_share(self, sample: int) -> float:
        """The largest share of the key's limit the res.php requests of any hour used, at full
        scale (``sample`` times the slice's requests and uploads)."""
        if not self.requests_by_second:
            return 0.0
        requests = per_minute(self.requests_by_second)
        uploads = per_minute(self.uploads_by_second)
        first, last = min(requests), max(requests)
        span = int(RES_WINDOW_SECONDS // 60)
        worst = 0.0
        for start in range(first, max(first, last - span + 1) + 1):
            asked = sum(requests.get(minute, 0) for minute in range(start, start + span))
            uploaded = sum(uploads.get(minute, 0) for minute in range(start, start + span))
            allowed = RES_PER_UPLOAD * uploaded * sample + RES_ALLOWANCE
            worst = max(worst, asked * sample / allowed)
        return worst


def per_minute(by_second: Counter[int]) -> Counter[int]:
    minutes: Counter[int] = Counter()
    for second, count in by_second.items():
        minutes[second // 60] += count
    return minutes


@dataclass(frozen=True)
class PartitionLoad:
    partition: str
    units_per_second: float
    limit: float

    @property
    def share(self) -> float:
        return self.units_per_second / self.limit


class CapacityStore(InMemoryTaskStore):
    """The table: the contract's store, with every request's capacity charged to the
    partition that serves it, per second. Finished tasks leave it (``forget_finished``), as
    their items leave the due index: only PENDING ones are queried."""

    def __init__(self, clock: SimClock, due_shards: int, sample: int) -> None:
        super().__init__(due_shards=due_shards)
        self._clock = clock
        self._shards = due_shards
        self._sample = sample
        self.requests = 0.0
        self.written: defaultdict[tuple[str, int], float] = defaultdict(float)
        self.reads: defaultdict[tuple[str, int], float] = defaultdict(float)
        self.item_bytes: dict[str, int] = {}
        self.stored_at: dict[str, float] = {}

    def _charge(
        self, key: str, units: float, *, index: int = 0, read: bool = False, share: float = 1.0
    ) -> None:
        """One request on ``key``'s item, and ``index`` due index entries written for it.
        ``share``: the slice's part of a request the whole stack makes once, whatever its
        tasks (a lease, a shard's Query), where a task's own request is the slice's whole."""
        self._clock.poller_cpu(WRITE_CPU_SECONDS * share)
        second = int(self._clock())
        self.requests += share
        bucket = self.reads if read else self.written
        bucket[(TABLE, second)] += units * share
        if index:
            shard = f"due-shard-{due_shard_of(key, self._shards)}"
            self.written[(shard, second)] += index

    def _write_units(self, key: str, extra: int = 0) -> float:
        return math.ceil((self.item_bytes.get(key, 600) + extra) / WRITE_UNIT_BYTES)

    def record_submission(self, task: NewTask) -> SubmissionOutcome:
        self.item_bytes[task.task_id] = 400 + sum(map(len, task.request.fields.values()))
        self._charge(task.task_id, self._write_units(task.task_id), index=1)
        return super().record_submission(task)

    def record_solution(self, result: TaskResult) -> RecordedSolution:
        self._charge(result.task_id, self._write_units(result.task_id, len(result.code)), index=1)
        recorded = super().record_solution(result)
        if recorded.outcome is StoreOutcome.STORED:
            self.stored_at[result.task_id] = result.received_at
        return recorded

    @property
    def units(self) -> tuple[float, float]:
        """Write and read units of the run (the slice's)."""
        return sum(self.written.values()), sum(self.reads.values())

    def record_failure(self, result: TaskResult) -> StoreOutcome:
        self._charge(result.task_id, self._write_units(result.task_id), index=1)
        return super().record_failure(result)

    def mark_expired(self, task_id: str, now: float) -> bool:
        self._charge(task_id, self._write_units(task_id), index=1)
        return super().mark_expired(task_id, now)

    def reschedule_poll(
        self,
        task_id: str,
        due_at: float,
        poll_attempts: int,
        last_checked_at: float | None = None,
    ) -> bool:
        # A new sort key value in the index: its entry is deleted and put again.
        self._charge(task_id, self._write_units(task_id), index=2)
        return super().reschedule_poll(task_id, due_at, poll_attempts, last_checked_at)

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        found = super().due_tasks(now, limit, shards)
        self._charge_queries(len(found), shards)
        return found

    def next_due_at(
        self, after: float, until: float, shards: Collection[int] | None = None
    ) -> float | None:
        self._charge_queries(0, shards)
        return super().next_due_at(after, until, shards)

    def _charge_queries(self, entries: int, shards: Collection[int] | None) -> None:
        """One Query a shard the poller reads (DueIndex queries them at once), the entries
        spread over them: the whole stack's Query, which finds the sample's entries of every
        slice, is the slice's share of one."""
        read = range(self._shards) if shards is None else sorted(shards)
        second = int(self._clock())
        per_shard = entries * self._sample * INDEX_ENTRY_BYTES / max(1, len(read))
        units = max(1, math.ceil(per_shard / READ_UNIT_BYTES)) / 2
        for shard in read:
            self._clock.poller_cpu(WRITE_CPU_SECONDS * self._once)
            self.requests += self._once
            self.reads[(f"due-shard-{shard}", second)] += units * self._once

    @property
    def _once(self) -> float:
        """The slice's share of what the whole stack does once (its poller's sweeps, leases
        and Queries: the slice runs every one of them, for its 1/sample of the tasks)."""
        return 1 / self._sample

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        self._charge("#poller-lease", 1, share=self._once)
        return super().acquire_poller_lease(holder, now, until)

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        self._charge("#poller-lease", 1, share=self._once)
        super().release_poller_lease(holder, now, solve_samples, busy_at)

    def claim_poller_succession(self, holder: str, now: float, until: float) -> bool:
        self._charge("#poller-lease", 1, share=self._once)
        return super().claim_poller_succession(holder, now, until)

    def mark_poller_busy(self, holder: str, busy_at: float) -> None:
        self._charge("#poller-lease", 1, share=self._once)
        super().mark_poller_busy(holder, busy_at)

    def acquire_helper_lease(self, group: int, holder: str, now: float, until: float) -> bool:
        self._charge(f"#poller-helper-{group}", 1, share=self._once)
        return super().acquire_helper_lease(group, holder, now, until)

    def record_helper_load(self, group: int, holder: str, load_seconds: float) -> None:
        self._charge(f"#poller-helper-{group}", 1, share=self._once)
        super().record_helper_load(group, holder, load_seconds)

    def release_helper_lease(self, group: int, holder: str, now: float) -> None:
        self._charge(f"#poller-helper-{group}", 1, share=self._once)
        super().release_helper_lease(group, holder, now)

    def live_helpers(self, groups: int, now: float) -> dict[int, HelperLoad]:
        """One read of the groups' lease items (a BatchGetItem in the DynamoDB store)."""
        self._charge("#poller-helpers", max(1, groups) / 2, read=True, share=self._once)
        return super().live_helpers(groups, now)

    def forget_finished(self) -> None:
        for task_id in [
            t for t, task in self.tasks.items() if task.status is not TaskStatus.PENDING
        ]:
            del self.tasks[task_id]

    def hottest(self) -> PartitionLoad:
        """The busiest minute of the table or of one due shard's partition, as the largest share
        of its limit, at full scale (a minute's average: a sampled second's burst times the
        sample would overstate it)."""
        loads = [
            PartitionLoad(name, units * self._sample / 60, _limit(name, read))
            for bucket, read in ((self.written, False), (self.reads, True))
            for (name, _), units in _by_minute(bucket).items()
        ]
        return max(loads, key=lambda load: load.share, default=PartitionLoad("-", 0.0, 1.0))


def _by_minute(bucket: Mapping[tuple[str, int], float]) -> dict[tuple[str, int], float]:
    minutes: defaultdict[tuple[str, int], float] = defaultdict(float)
    for (name, second), units in bucket.items():
        minutes[(name, second // 60)] += units
    return minutes


def _limit(name: str, read: bool) -> float:
    if name == TABLE:
        return NEW_TABLE_READ_UNITS if read else NEW_TABLE_WRITE_UNITS
    return PARTITION_READ_UNITS if read else PARTITION_WRITE_UNITS
