"""Fallback polling rules: which tasks to ask about, when, how many requests, when to give up.

One invocation holds the poller lease (one sweeper at a time) and sweeps every few seconds while
tasks will come due before it stops, so a result is looked for when it is likely ready rather
than at the next scheduled minute; under load it starts helpers, each holding the lease of a
group of due shards (logic/poller_fan_out.py). Every HTTP request to res.php is budgeted and
made only with time left before the Lambda deadline. While an invocation holds the lease, a "not
ready" moves the task's next check in memory and the table is written once when the invocation
ends: a task whose pingback arrives meanwhile costs no write at all (a due-index move is three
write units). Up to `request_workers` res.php requests are in flight at once, and the answers of
one request are written as logic/poll_final_writes.py says.

A check of the deadline cannot stop a call in progress, so every store and res.php call is
bounded (the clients' timeouts and retries, PollPolicy.slowest_call_seconds) and starts only with
time for the slowest one left before the margin; the margin holds the last next-check writes and
the lease's release, each a bounded store call (the soak's invocations ran into their timeout
when the table answered slowly).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderBatchRefusedError,
    ProviderRetryableError,
    StoreError,
)
from pingback_guard.domain.lease import PollerLease, PollerStart
from pingback_guard.domain.task import (
    DueTask,
)
from pingback_guard.kinds.registry import polled_alone
from pingback_guard.logic.accounts import ProviderAccounts, UnknownAccountError, as_accounts
from pingback_guard.logic.poll_accounts import with_accounts
from pingback_guard.logic.poll_batches import batched_requests, with_user_agents_asked_alone
from pingback_guard.logic.poll_final_writes import FinalWrite, FinalWrites, final_write
from pingback_guard.logic.poll_schedule import (
    KEEP_SWEEPING_AFTER_WORK_SECONDS,
    RIDE_AHEAD_SECONDS,
    RIDING_CHECKS,
    PollPolicy,
    SolveTimes,
)
from pingback_guard.logic.poller_fan_out import PollerFanOut
from pingback_guard.logic.results import TokenStored
from pingback_guard.logic.sweep_grid import next_sweep_after
from pingback_guard.logic.sweep_report import SweepReport
from pingback_guard.provider.answers import AnswerKind, ProviderAnswer
from pingback_guard.provider.client import ProviderClient

NO_ANSWER = ProviderAnswer(AnswerKind.RETRYABLE, "NO_ANSWER")
# How often an invocation taking over asks for the lease again once its holder should have
# stopped (a holder gives it back after its last sweep and the writes it held).
TAKE_OVER_RETRY_SECONDS = 1.0


class PollerService:
    def __init__(
        self,
        store: TaskStore,
        provider: ProviderClient | ProviderAccounts,
        policy: PollPolicy,
        solve_times: SolveTimes,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        on_token_stored: TokenStored | None = None,
        fan_out: PollerFanOut | None = None,
        cpu_clock: Callable[[], float] = time.process_time,
    ) -> None:
        """``fan_out``: the main holder starts helpers under load (logic/poller_fan_out.py);
        ``cpu_clock``: the process's CPU time, all threads (each sweep's load)."""
        self._store = store
        self._fan_out = fan_out
        self._cpu_clock = cpu_clock
        # The helper group this invocation sweeps; None: it holds the main lease.
        self._group: int | None = None
        self._accounts = as_accounts(provider)
        # Accounts that refused this sweep (with several; one account's refusal stops the sweep).
        self._refused_accounts: set[str | None] = set()
        self._policy = policy
        self._solve_times = solve_times
        self._clock = clock
        self._sleep = sleep
        self._batching_paused_until = -math.inf
        self._final_writes = FinalWrites(store, policy.store_writers, on_token_stored)
        # Next checks held in memory while this invocation holds the lease; None: write through.
        self._plans: dict[str, DueTask] | None = None
        # When a holder of the lease last had a task to check (kept in the lease item).
        self._busy_at: float | None = None
        self._askers = ThreadPoolExecutor(policy.request_workers, thread_name_prefix="poll-ask")

    def close(self) -> None:
        """Ends the request threads (Lambda's end with its execution environment)."""
        self._askers.shutdown()

    def run(
        self,
        remaining_seconds: Callable[[], float],
        on_sweep: Callable[[SweepReport], None] | None = None,
        start: PollerStart = PollerStart.ALONE,
        group: int | None = None,
    ) -> SweepReport:
        """Hold the lease and sweep every few seconds while tasks come due before we stop.

        ``on_sweep`` is told the run's report so far after each sweep: a run lasts up to a
        minute, and its counts (expired tasks, recoveries) must not wait for its end. ``start``:
        a scheduled or woken invocation that finds a holder claims to succeed it and takes over
        when it stops (one claimant at a time: the rest give way); a woken one has work from its
        start. ``group``: a helper's, which sweeps that group's shards under the group's own
        lease."""
        report = SweepReport()
        holder = uuid.uuid4().hex
        started = self._clock()
        time_left = max(0.0, self._time_left(remaining_seconds))
        stop_at = started + min(self._policy.run_seconds, time_left)
        # Held to the Lambda deadline at most: a crashed holder's lease ends by itself.
        lease_until = started + remaining_seconds()
        if group is None:
            taken = self._take_lease(holder, lease_until, stop_at, remaining_seconds, report, start)
        else:
            taken = self._take_helper_lease(group, holder, lease_until, remaining_seconds, report)
        if not taken:
            return report
        self._plans, self._group = {}, group
        if start is PollerStart.WOKEN:
            self._became_busy(holder, self._clock(), report)
        load = 0.0
        try:
            while True:
                now = self._clock()
                shards = self._scope(now, load, report)
                cpu_before = self._cpu_clock()
                swept = self.sweep(now, remaining_seconds, shards)
                if not report.sweeps:
                    # Its tasks' ages are the last holder's doing (its last sweep stops at its
                    # deadline; a main holder's held checks reach a new helper a sweep late).
                    swept.oldest_due_seconds = 0.0
                load = self._measured_load(holder, now, cpu_before, swept)
                report.add(swept)
                if on_sweep:
                    on_sweep(report)
                if report.account_error or report.stopped_early:
                    return report
                next_sweep = next_sweep_after(now, self._policy.sweep_interval_seconds)
                if next_sweep > stop_at or not self._work_ahead(
                    holder, report, stop_at, remaining_seconds, shards
                ):
                    return report
                self._sleep(max(0.0, next_sweep - self._clock()))
        except StoreError:
            report.store_errors += 1
            return report
        finally:
            self._write_plans(report, remaining_seconds)
            self._release(holder)
            if group is not None and self._fan_out is not None:
                self._fan_out.helper_ended(group, load, report)

    def _scope(self, now: float, load: float, report: SweepReport) -> frozenset[int] | None:
        """The due shards this sweep covers (None: all); a main holder's plans for shards that
        a helper took are written first, for the helper to find."""
        if self._fan_out is None:
            return None
        if self._group is not None:
            return self._fan_out.helper_scope(self._group)
        shards = self._fan_out.main_scope(now, load, report)
        if shards is not None:
            self._hand_over_plans(shards, report)
        return shards

    def _measured_load(
        self, holder: str, started: float, cpu_before: float, swept: SweepReport
    ) -> float:
        """The sweep's load (logic/poller_fan_out.py); a helper keeps it in its lease item for
        the main holder."""
        if self._fan_out is None:
            return 0.0
        load = self._fan_out.sweep_load(
            self._cpu_clock() - cpu_before, self._clock() - started, swept
        )
        if self._group is not None:
            try:
                self._store.record_helper_load(self._group, holder, load)
            except StoreError:
                swept.store_errors += 1
        return load

    def _hand_over_plans(self, shards: frozenset[int], report: SweepReport) -> None:
        plans = self._plans or {}
        for task_id in [
            task_id for task_id in plans if self._store.due_shard(task_id) not in shards
        ]:
            task = plans.pop(task_id)
            try:
                self._store.reschedule_poll(
                    task.task_id, task.due_at, task.poll_attempts, task.last_checked_at
                )
            except StoreError:
                report.store_errors += 1  # the task stays due at its older time: checked sooner

    def _work_ahead(
        self,
        holder: str,
        swept: SweepReport,
        stop_at: float,
        remaining_seconds: Callable[[], float],
        shards: frozenset[int] | None,
    ) -> bool:
        """Sweep on? Once this invocation has had work, to its end: a task submitted meanwhile
        (a busy stack's next one) is then checked when due, not at the next scheduled minute.
        So does an idle one while the stack had work within KEEP_SWEEPING_AFTER_WORK_SECONDS
        (sporadic tasks); else it asks the index whether a task comes due before it stops."""
        now = self._clock()
        if swept.due or self._plans:
            self._became_busy(holder, now, swept)
            return True
        if self._busy_at is not None and now - self._busy_at < KEEP_SWEEPING_AFTER_WORK_SECONDS:
            return True
        if self._time_left(remaining_seconds) <= 0:
            return False
        # Overdue tasks count too: a sweep out of budget leaves them for the next one.
        return self._store.next_due_at(0.0, stop_at, shards) is not None

    def sweep(
        self,
        now: float,
        remaining_seconds: Callable[[], float],
        shards: frozenset[int] | None = None,
    ) -> SweepReport:
        """Poll due PENDING tasks (in ``shards``, when given) until done, out of request budget
        or out of time."""
        report = SweepReport(sweeps=1)
        if not self._may_call(remaining_seconds, report):
            return report
        try:
            due, waiting = self._due(now, shards)
        except StoreError:
            report.store_errors += 1  # the next sweep finds the same tasks still due
            return report
        report.due = len(due)
        pending = [task for task in due if not self._deferred(task, now, report)]
        report.oldest_due_seconds = max((now - task.due_at for task in pending), default=0.0)
        batched = sum(not polled_alone(task.method) for task in pending)
        pending += self._riders(now, batched, waiting, remaining_seconds, shards)
        try:
            pending = with_accounts(pending, self._accounts, self._store)
        except StoreError:
            report.store_errors += 1
            return report
        self._refused_accounts.clear()
        self._ask_all(self._requests_for(pending, now), now, remaining_seconds, report)
        # As many due tasks as a sweep may check: more were left due behind them.
        full = len(due) >= self._policy.max_tasks_per_sweep
        report.budget_exhausted = max(report.budget_exhausted, int(full))
        return report

    def _ask_all(
        self,
        queue: list[list[DueTask]],
        now: float,
        remaining_seconds: Callable[[], float],
        report: SweepReport,
    ) -> None:
        """Up to request_workers res.php requests at once, each answer settled as it comes.

        One id per request for the kinds whose answers may hold '|' makes a sweep of many due
        image or GeeTest tasks as many requests; asked one after another, a slow provider or a
        loaded function got through a few dozen a minute, and tasks waiting behind them were
        first checked after the provider had forgotten them."""
        in_flight: dict[Future[dict[str, ProviderAnswer]], list[DueTask]] = {}
        asking, started = True, self._clock()
        while in_flight or (asking and queue):
            while asking and queue and len(in_flight) < self._policy.request_workers:
                asking = self._may_ask(started, remaining_seconds, report)
                if asking:
                    batch = queue.pop(0)
                    if batch[0].provider_account in self._refused_accounts:
                        continue
                    report.requests += 1
                    task_ids = [task.task_id for task in batch]
                    ask = self._accounts.client_for(batch[0].provider_account).get_results
                    in_flight[self._askers.submit(ask, task_ids)] = batch
            if not in_flight:
                break
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                batch = in_flight.pop(future)
                answers = self._answers(future, batch, now, queue, report)
                if report.account_error:
                    asking = False
                if answers is None:
                    continue
                read = with_user_agents_asked_alone(batch, answers)
                queue[:0] = [[task] for task in read.ask_alone]
                batch, answers = read.settled, read.answers
                # Settled even out of time: no write starts then, and the tasks stay due.
                if not self._settle(batch, answers, now, remaining_seconds, report):
                    report.stopped_early = True
                    asking = False

    def _may_ask(
        self, started: float, remaining_seconds: Callable[[], float], report: SweepReport
    ) -> bool:
        """Within the sweep's request budget and its interval: asking for longer would
        keep the main holder from starting helpers, the fan-out's one chance being between two
        sweeps (the tasks left are the next sweep's, the most overdue first)."""
        policy = self._policy
        if (
            report.requests >= policy.max_requests_per_sweep
            or self._clock() - started > policy.sweep_interval_seconds
        ):
            report.budget_exhausted += 1
            return False
        return self._may_call(remaining_seconds, report)

    def _may_call(self, remaining_seconds: Callable[[], float], report: SweepReport) -> bool:
        if self._time_left(remaining_seconds) <= 0:
            report.stopped_early = True
            return False
        return True

    def _answers(
        self,
        future: Future[dict[str, ProviderAnswer]],
        batch: list[DueTask],
        now: float,
        queue: list[list[DueTask]],
        report: SweepReport,
    ) -> dict[str, ProviderAnswer] | None:
        """The request's answers; {} when none came (each task is checked later); None when
        the batch is asked again or the account stops the sweep."""
        error = future.exception()
        if error is None:
            return future.result()
        if isinstance(error, ProviderBatchRefusedError):
            # This sweep asks one id per request; batching is probed again later.
            report.batch_refused += 1
            self._batching_paused_until = now + self._policy.batch_probe_seconds
            queue[:] = [[task] for group in [batch, *queue] for task in group]
            return None
        if isinstance(error, UnknownAccountError) or (
            isinstance(error, ProviderAccountError) and self._accounts.has_several
        ):
            # This account's tasks wait for its recovery; the other accounts' are asked.
            self._refused_accounts.add(batch[0].provider_account)
            report.retryable_errors += 1
            return {}
        if isinstance(error, ProviderAccountError):
            report.account_error = str(error)
            return None
        if isinstance(error, ProviderRetryableError):
            report.retryable_errors += 1
            return {}
        raise error

    def _due(
        self, now: float, shards: frozenset[int] | None
    ) -> tuple[list[DueTask], list[DueTask]]:
        """Due tasks as the table has them, with the next checks held in memory applied; and
        the checks held in memory (tasks no longer PENDING dropped when the index says so)."""
        plans = self._plans
        limit = self._policy.max_tasks_per_sweep
        if plans is None:
            return self._store.due_tasks(now, limit=limit, shards=shards), []
        found = self._store.due_tasks(now, limit=limit + len(plans), shards=shards)
        if len(found) < limit + len(plans):
            # Not in the index any more: finished (a pingback came), nothing to write for it.
            seen = {task.task_id for task in found}
            for task_id in [task_id for task_id in plans if task_id not in seen]:
                del plans[task_id]
        current = [plans.get(task.task_id, task) for task in found]
        return [task for task in current if task.due_at <= now][:limit], list(plans.values())

    def _riders(
        self,
        now: float,
        requested: int,
        planned: Sequence[DueTask],
        remaining_seconds: Callable[[], float],
        shards: frozenset[int] | None,
    ) -> list[DueTask]:
        """Tasks not due yet (their next check held in memory, or their first one ahead) that
        may fill the room left in the ids= requests made for ``requested`` due tasks: checked at
        no request of their own. A kind polled one id per request never rides: its early check
        would be a request of its own (GeeTest cost two more requests a task that way)."""
        size = self._policy.ids_per_request if now >= self._batching_paused_until else 1
        room = -requested % size if requested else 0
        if not room or self._time_left(remaining_seconds) <= 0:
            return []
        planned_ids = {task.task_id for task in planned}
        ahead = [
            task
            for task in self._store.due_tasks(
                now + RIDE_AHEAD_SECONDS, limit=room + requested, shards=shards
            )
            if task.due_at > now and task.task_id not in planned_ids
        ]
        waiting = [task for task in planned if task.due_at > now] + ahead
        schedule = self._policy.schedule
        riders = [
            task
            for task in waiting
            if not polled_alone(task.method) and schedule.may_ride(task, now)
        ]
        return sorted(riders, key=lambda task: task.due_at)[:room]

    def _reschedule(
        self, task: DueTask, due_at: float, attempts: int, checked: float | None
    ) -> None:
        if self._plans is None:
            self._store.reschedule_poll(task.task_id, due_at, attempts, checked)
        else:
            self._plans[task.task_id] = replace(
                task, due_at=due_at, poll_attempts=attempts, last_checked_at=checked
            )

    def _forget_plan(self, task_id: str) -> None:
        if self._plans is not None:
            self._plans.pop(task_id, None)

    def _write_plans(self, report: SweepReport, remaining_seconds: Callable[[], float]) -> None:
        """Each write only with time for it and half the deadline margin left (the rest releases
        the lease): a plan not written leaves its task due at its older time, checked again
        sooner."""
        plans, self._plans = self._plans or {}, None
        policy = self._policy
        for written, task in enumerate(plans.values()):
            if (
                remaining_seconds() - policy.store_call_seconds
                <= policy.deadline_margin_seconds / 2
            ):
                report.plans_left_due += len(plans) - written
                return
            try:
                self._store.reschedule_poll(
                    task.task_id, task.due_at, task.poll_attempts, task.last_checked_at
                )
            except StoreError:
                report.store_errors += 1  # the task stays due: it is checked again sooner

    def _time_left(self, remaining_seconds: Callable[[], float]) -> float:
        """Time left to start a call: the slowest one ends before the deadline margin."""
        policy = self._policy
        return remaining_seconds() - policy.deadline_margin_seconds - policy.slowest_call_seconds

    def _requests_for(self, tasks: Sequence[DueTask], now: float) -> list[list[DueTask]]:
        """logic/poll_batches.py; one id per request while batching is paused. The soak lost
        images and GeeTest asked one id each behind every batch and young check, never checked
        until the provider had forgotten them: the most overdue go first, whatever their kind."""
        size = self._policy.ids_per_request if now >= self._batching_paused_until else 1
        return batched_requests(tasks, size)

    def _deferred(self, task: DueTask, now: float, report: SweepReport) -> bool:
        """A task likely not solved yet, or checked a moment ago by a waiting worker's
        read-through, waits for its next check without a request."""
        if self._policy.is_expired(task, now):
            return False
        not_before = self._not_before(task)
        if not_before <= now:
            return False
        try:
            due_at = min(not_before, self._policy.expires_at(task))
            self._reschedule(task, due_at, task.poll_attempts, task.last_checked_at)
        except StoreError:
            report.store_errors += 1
        report.deferred += 1
        return True

    def _not_before(self, task: DueTask) -> float:
        if task.last_checked_at is not None:
            return self._policy.schedule.poller_after_check(
                task, task.last_checked_at, self._first_check_at(task)
            )
        if task.poll_attempts:
            return -math.inf
        return self._first_check_at(task)

    def _settle(
        self,
        batch: Sequence[DueTask],
        answers: dict[str, ProviderAnswer],
        now: float,
        remaining_seconds: Callable[[], float],
        report: SweepReport,
    ) -> bool:
        """Reschedule the tasks still waiting; write the final ones. False: out of time, the
        tasks not written stay due."""
        final: list[FinalWrite] = []
        for task in batch:
            answer = answers.get(task.task_id, NO_ANSWER)
            if answer.is_final or self._policy.is_expired(task, now):
                self._forget_plan(task.task_id)
                write = final_write(task, answer, now)
                if write.result is not None and answer.kind is AnswerKind.READY:
                    self._solve_times.observe_window(
                        task.method, task.submitted_at, write.result.finished_at_earliest, now
                    )
                final.append(write)
            else:
                self._check_later(task, answer, now, report)
        return self._final_writes.write(
            final, now, lambda: self._time_left(remaining_seconds) > 0, report
        )

    def _check_later(
        self, task: DueTask, answer: ProviderAnswer, now: float, report: SweepReport
    ) -> None:
        checked = now if answer.kind is AnswerKind.NOT_READY else task.last_checked_at
        attempts = task.poll_attempts + 1
        try:
            self._reschedule(task, self._next_check(task, now, attempts), attempts, checked)
        except StoreError:
            report.store_errors += 1
            return
        report.not_ready += int(answer.kind is AnswerKind.NOT_READY)
        report.unreadable_answers += int(answer.kind is AnswerKind.UNREADABLE)

    def _next_check(self, task: DueTask, now: float, attempts: int) -> float:
        expires_at = self._policy.expires_at(task)
        schedule = self._policy.schedule
        if schedule.exhausted(attempts):
            return max(now + self._policy.backoff_base_seconds, expires_at)
        first_at = self._first_check_at(task)
        if now >= first_at and attempts <= RIDING_CHECKS:
            # Young: the next sweep's request (ids= shares it) looks again.
            return min(schedule.young_check_after(now), expires_at)
        return min(schedule.next_check(task.submitted_at, now, first_at), expires_at)

    def _first_check_at(self, task: DueTask) -> float:
        return task.submitted_at + self._solve_times.first_check(task.method)

    def _became_busy(self, holder: str, now: float, report: SweepReport) -> None:
        """This invocation has work. Said in the lease item at once when the stack was idle
        (else only when the lease is given back): a submit then sees the poller sweep on and
        starts none (logic/poller_wake.py)."""
        idle = self._busy_at is None or now - self._busy_at >= KEEP_SWEEPING_AFTER_WORK_SECONDS
        self._busy_at = now
        if idle and self._group is None:
            try:
                self._store.mark_poller_busy(holder, now)
            except StoreError:
                report.store_errors += 1  # said when the lease is given back instead

    def _take_lease(
        self,
        holder: str,
        lease_until: float,
        stop_at: float,
        remaining_seconds: Callable[[], float],
        report: SweepReport,
        start: PollerStart,
    ) -> bool:
        """One sweeper at a time, and at most one invocation waiting to take over (a scheduled
        or woken one that claims to succeed the holder; any other gives way at once). An
        operator's invocation waits once for a holder about to stop."""
        time_left = self._time_left(remaining_seconds)
        if not self._may_call(remaining_seconds, report):
            return False
        try:
            lease = self._store.acquire_poller_lease(holder, self._clock(), lease_until)
            if not lease.acquired and start is not PollerStart.ALONE:
                lease = self._take_over(holder, lease, lease_until, stop_at, remaining_seconds)
            wait = lease.held_until - self._clock()
            soon = 0 < wait < min(self._policy.sweep_interval_seconds * 2, time_left)
            if not lease.acquired and soon and start is PollerStart.ALONE:
                self._sleep(wait)
                lease = self._store.acquire_poller_lease(holder, self._clock(), lease_until)
        except StoreError:
            report.store_errors += 1
            return False
        if not lease.acquired:
            report.lease_busy += 1
            return False
        if lease.solve_samples:
            self._solve_times.samples.clear()
            self._solve_times.load(lease.solve_samples)
        self._busy_at = lease.busy_at
        return True

    def _take_over(
        self,
        holder: str,
        lease: PollerLease,
        lease_until: float,
        stop_at: float,
        remaining_seconds: Callable[[], float],
    ) -> PollerLease:
        """Claim to succeed the holder, wait for it to stop and take the lease then, while that
        leaves this invocation a sweep before its own stop. The holder is the same function: it
        stops sweeping as long before its deadline (its lease's end) as this one does. Without
        a successor, after a woken invocation's minute nothing swept until the next scheduled
        minute or submit; with several, a dozen waited behind one holder (the chaos runs'
        compressed schedule)."""
        before_deadline = lease_until - stop_at
        last_start = stop_at - self._policy.sweep_interval_seconds
        while not lease.acquired:
            now = self._clock()
            retry_at = max(lease.held_until - before_deadline, now + TAKE_OVER_RETRY_SECONDS)
            if retry_at > last_start or self._time_left(remaining_seconds) <= 0:
                return lease
            if not self._store.claim_poller_succession(holder, now, last_start):
                return lease
            self._sleep(retry_at - now)
            lease = self._store.acquire_poller_lease(holder, self._clock(), lease_until)
        return lease

    def _take_helper_lease(
        self,
        group: int,
        holder: str,
        lease_until: float,
        remaining_seconds: Callable[[], float],
        report: SweepReport,
    ) -> bool:
        """A helper gives way to a holder of its group: the main holder starts one at a time."""
        if not self._may_call(remaining_seconds, report):
            return False
        try:
            taken = self._store.acquire_helper_lease(group, holder, self._clock(), lease_until)
        except StoreError:
            report.store_errors += 1
            return False
        report.lease_busy += int(not taken)
        self._busy_at = None
        return taken

    def _release(self, holder: str) -> None:
        group, self._group = self._group, None
        try:
            if group is None:
                self._store.release_poller_lease(
                    holder, self._clock(), self._solve_times.dump(), self._busy_at
                )
            else:
                self._store.release_helper_lease(group, holder, self._clock())
        except StoreError:
            return  # the lease ends by itself at the Lambda deadline
