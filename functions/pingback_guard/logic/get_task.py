"""What a worker sees of a task, and the res.php check its waiting may trigger (read-through)."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from pingback_guard.data.poller_state import PollerLeaseState, PollerState
from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import PingbackGuardError, ProviderAccountError
from pingback_guard.domain.task import (
    DeliveryPath,
    StoreOutcome,
    Task,
    TaskOrigin,
    TaskResult,
    TaskStatus,
)
from pingback_guard.kinds.registry import kind_of, parse_answer
from pingback_guard.logic.access import Access, access_of
from pingback_guard.logic.accounts import ProviderAccounts, as_accounts
from pingback_guard.logic.pacing import MIN_RETRY_AFTER_SECONDS, paced
from pingback_guard.logic.poll_schedule import (
    KEEP_SWEEPING_AFTER_WORK_SECONDS,
    RIDING_CHECKS,
    CheckSchedule,
    SolveTimes,
)
from pingback_guard.logic.results import Delivery, store_result, stored_delivery
from pingback_guard.logic.sweep_grid import SWEEP_RESULTS_SECONDS, sweep_at_or_after
from pingback_guard.provider.answers import AnswerKind
from pingback_guard.provider.client import ProviderClient


class ReadThroughOutcome(StrEnum):
    """Each outcome is also the name of the metric the handler emits for it."""

    SKIPPED = "ReadThroughSkipped"  # another caller claimed the same check first
    NOT_READY = "ReadThroughNotReady"
    STORED = "ReadThroughRecovered"
    TASK_FAILED = "ReadThroughTaskFailed"
    ALREADY_STORED = "ReadThroughDuplicate"
    NO_ANSWER = "ReadThroughNoAnswer"  # retryable answer: the poller or the next GET tries again
    ERROR = "ReadThroughError"  # provider, secret or store error: the view is PENDING
    # The key is refused: counted under the metric the account alarm already watches.
    ACCOUNT_ERROR = "ProviderAccountError"


@dataclass(frozen=True)
class Lookup:
    view: dict[str, Any]
    read_through: ReadThroughOutcome | None = None
    delivery: Delivery | None = None
    error: str | None = None


# Solved tasks already learned from, so a worker reading its result again is not a new sample.
LEARNED_IDS_KEPT = 1000
# How long a process trusts what it read of the poller's lease: an invocation holds it for a
# minute, and one that stops gives it back; a stale answer moves one read-through by this much.
POLLER_STATE_KEPT_SECONDS = 5.0
# A busy poller's invocations sweep 55 s of each scheduled minute: the lease is free between
# two for about 5 s and the invocation's start, and the tasks are still the poller's.
BETWEEN_INVOCATIONS_SECONDS = 10.0


@dataclass(frozen=True)
class ReadThroughPolicy:
    """When a waiting worker's GET checks res.php itself, and when its next look is worth it.

    While a poller invocation sweeps, it checks a young task every min gap from its early first
    check (``ids=`` batches shared by every due task), so a GET only reads what it stored: the
    read-through steps in past the poller's young checks, as the net for a poller that falls
    behind (then after gaps that grow with the task's age). While none sweeps (a fresh or idle
    stack: the schedule's next minute may be most of a minute away), the read-through checks on
    the poller's own schedule instead. Either way a task is checked by one of them, not both:
    checked by both, a task whose pingback arrives cost the GET workers' tasks more res.php
    requests (1.2-1.3 a task on a fresh stack) and their answers were older.

    ``solve_times`` is learned in this process from the results its callers read (a pingback's
    arrival, a check's narrow window); until enough are seen, the configured expectation.
    """

    schedule: CheckSchedule
    solve_times: SolveTimes

    def is_due(self, task: Task, now: float, poller_sweeping: bool) -> bool:
        # A contested task is decided by its pingback only: a fetched result would be nobody's.
        if task.status is not TaskStatus.PENDING or task.submitted_at is None or task.is_contested:
            return False
        return now >= self._next_check(task, task.submitted_at, _last_check(task), poller_sweeping)

    def next_check_at(
        self, task: Task, now: float, checked_now: bool, poller_sweeping: bool
    ) -> float:
        """When a GET is next worth making: when the read-through or a sweeping poller checks
        res.php next (and a result it finds is in the table). ``checked_now``: a check was made
        or claimed just now."""
        submitted_at = task.submitted_at if task.submitted_at is not None else now
        last = now if checked_now else _last_check(task)
        at = self._next_check(task, submitted_at, last, poller_sweeping)
        if poller_sweeping:
            at = min(at, self._pollers_next_young_check(task, submitted_at, now))
        return max(at, now + MIN_RETRY_AFTER_SECONDS)

    def claim_gap(self) -> float:
        """The gap that guards a claim: two callers who read the same item (and both judged a
        check due) make one check; no schedule checks one task more often than this."""
        return self.schedule.min_gap_seconds

    def _next_check(
        self, task: Task, submitted_at: float, last: float | None, poller_sweeping: bool
    ) -> float:
        first = submitted_at + self.solve_times.first_check(_method(task))
        young_until = first + RIDING_CHECKS * self.schedule.min_gap_seconds
        if poller_sweeping:
            if last is None or last < young_until:
                return young_until
            return self.schedule.after_check(submitted_at, last)
        if last is None or last < first:
            return first
        if last < young_until:
            return last + self.schedule.min_gap_seconds
        return self.schedule.after_check(submitted_at, last)

    def _pollers_next_young_check(self, task: Task, submitted_at: float, now: float) -> float:
        """When the result of a sweeping poller's next young check of the task is in the
        table: its first check, then every min gap, each in the sweep at or after its planned
        moment on the poller's grid (logic/sweep_grid.py), a sweep's time later; +inf once the
        young checks are spent. Named the schedule's moments instead, a paced worker looked
        just before a sweep up to an interval later, then a min gap after it."""
        interval = self.schedule.sweep_interval_seconds

        def swept(planned: float) -> float:
            return planned if interval is None else sweep_at_or_after(planned, interval)

        check_at = swept(submitted_at + self.solve_times.first_check(_method(task)))
        for _ in range(RIDING_CHECKS):
            if check_at + SWEEP_RESULTS_SECONDS > now:
                return check_at + SWEEP_RESULTS_SECONDS
            check_at = swept(self.schedule.young_check_after(check_at))
        return math.inf


class PollerWatch:
    """Is the poller sweeping? Its lease, read at most once per POLLER_STATE_KEPT_SECONDS per
    process, and only when a PENDING task's GET asks: an invocation holds it now, or a busy one
    gave it back a moment ago and the next, a scheduled minute after its start, sweeps on."""

    def __init__(self, state: PollerState) -> None:
        self._state = state
        self._lease = PollerLeaseState(None, None)
        self._read_at = -math.inf

    def sweeping(self, now: float) -> bool:
        until = self._read(now).lease_until
        if until is None:
            return False
        return until > now or (self._busy(now) and now - until < BETWEEN_INVOCATIONS_SECONDS)

    def sweeping_on(self, now: float) -> bool:
        """Sweeping, and the next scheduled invocation sweeps on after this one: a holder had
        work lately. A holder of an idle stack may stop after its one sweep."""
        return self.sweeping(now) and self._busy(now)

    def _busy(self, now: float) -> bool:
        busy_at = self._lease.busy_at
        return busy_at is not None and now - busy_at < KEEP_SWEEPING_AFTER_WORK_SECONDS

    def _read(self, now: float) -> PollerLeaseState:
        if now - self._read_at >= POLLER_STATE_KEPT_SECONDS:
            self._lease = self._state.lease()
            self._read_at = now
        return self._lease


class TaskQuery:
    def __init__(
        self,
        store: TaskStore,
        provider: ProviderClient | ProviderAccounts | None = None,
        policy: ReadThroughPolicy | None = None,
        admin_principal_arn: str = "",
        clock: Callable[[], float] = time.time,
        poller: PollerWatch | None = None,
    ) -> None:
        """``poller``: whether a poller invocation sweeps (None: never known to, as on a
        stack whose poller is idle)."""
        self._store = store
        self._accounts = None if provider is None else as_accounts(provider)
        self._policy = policy
        self._poller = poller
        self._admin = admin_principal_arn
        self._clock = clock
        self._learned: OrderedDict[str, None] = OrderedDict()

    def view(self, task_id: str, now: float, principal: str) -> dict[str, Any] | None:
        found = self.look(task_id, now, principal)
        return found.view if found else None

    def look(self, task_id: str, now: float, principal: str) -> Lookup | None:
        """Read the task (a StoreError here is the caller's 503); an overdue PENDING task is
        checked at res.php first. Nothing after the first read can fail the lookup. None for an
        unknown task and for another principal's task alike, before any res.php request."""
        task = self._store.get(task_id)
        access = Access.NONE if task is None else access_of(task, principal, self._admin)
        if task is None or access is Access.NONE:
            return None
        if access is Access.CLAIM:
            return Lookup(task.claim_view())
        # A smoke task's id was never the provider's: never checked there, nothing learned.
        if self._accounts is None or self._policy is None or task.origin is TaskOrigin.SMOKE:
            return Lookup(worker_view(task, now))
        self._learn(task, self._policy.solve_times)
        sweeping = self._poller_sweeping(task, now)
        found = self._checked(task, now, self._accounts, self._policy, sweeping)
        # Any read-through outcome means a check was made or claimed just now.
        checked = found.read_through is not None
        next_check_at = self._policy.next_check_at(task, now, checked, sweeping)
        return replace(found, view=paced(found.view, next_check_at, now))

    def _poller_sweeping(self, task: Task, now: float) -> bool:
        """Asked only for a PENDING task (a final one needs no check and no hint); a lease that
        cannot be read counts as no poller sweeping: the read-through then checks."""
        if self._poller is None or task.status is not TaskStatus.PENDING:
            return False
        try:
            return self._poller.sweeping(now)
        except PingbackGuardError:
            return False

    def _checked(
        self,
        task: Task,
        now: float,
        accounts: ProviderAccounts,
        policy: ReadThroughPolicy,
        sweeping: bool,
    ) -> Lookup:
        """Read through the provider account the task was submitted through, only."""
        if not policy.is_due(task, now, sweeping):
            return Lookup(worker_view(task, now))
        try:
            provider = accounts.client_for(task.provider_account)
            return self._read_through(task, now, provider, policy)
        except ProviderAccountError as error:
            view = worker_view(task, now)
            return Lookup(view, ReadThroughOutcome.ACCOUNT_ERROR, error=str(error))
        except PingbackGuardError as error:
            return Lookup(worker_view(task, now), ReadThroughOutcome.ERROR, error=str(error))

    def _read_through(
        self, task: Task, now: float, provider: ProviderClient, policy: ReadThroughPolicy
    ) -> Lookup:
        # The conditional write settles the races between callers that the item just read (which
        # said a check is due) cannot see.
        if not self._store.claim_read_through(task.task_id, now, policy.claim_gap()):
            return Lookup(worker_view(task, now), ReadThroughOutcome.SKIPPED)
        answer = provider.get_results([task.task_id]).get(task.task_id)
        answered_at = self._clock()
        if answer is None or not answer.is_final:
            if answer is not None and answer.kind is AnswerKind.NOT_READY:
                # Not finished when the provider read the request, which was after `now`: the
                # earliest bound of a later result never lies after the real finish.
                self._store.record_not_ready(task.task_id, now)
                return Lookup(worker_view(task, answered_at), ReadThroughOutcome.NOT_READY)
            return Lookup(worker_view(task, answered_at), ReadThroughOutcome.NO_ANSWER)
        result = TaskResult(
            task.task_id,
            answer.value,
            DeliveryPath.READ_THROUGH,
            received_at=answered_at,
            finished_after=_last_seen_unfinished(task),
            user_agent=answer.user_agent,
        )
        recorded = store_result(self._store, result)
        outcome = recorded.outcome
        stored = recorded.task or self._store.get(task.task_id) or task
        if outcome is not StoreOutcome.STORED:
            return Lookup(worker_view(stored, answered_at), ReadThroughOutcome.ALREADY_STORED)
        if result.is_failure:
            return Lookup(worker_view(stored, answered_at), ReadThroughOutcome.TASK_FAILED)
        self._learn(stored, policy.solve_times)
        return Lookup(
            worker_view(stored, answered_at),
            ReadThroughOutcome.STORED,
            stored_delivery(result, stored, answered_at),
        )

    def _learn(self, task: Task, solve_times: SolveTimes) -> None:
        if (
            task.status is not TaskStatus.SOLVED
            or task.submitted_at is None
            or task.received_at is None
            or task.task_id in self._learned
        ):
            return
        self._learned[task.task_id] = None
        if len(self._learned) > LEARNED_IDS_KEPT:
            self._learned.popitem(last=False)
        earliest = task.finished_at_earliest or task.received_at
        solve_times.observe_window(_method(task), task.submitted_at, earliest, task.received_at)


def worker_view(task: Task, now: float) -> dict[str, Any]:
    """The task as the API returns it: its kind, the answer exactly as sent (``solution``) and
    parsed for the worker (``answer``; ``answer_fits`` False flags an answer its kind does not
    expect, still served). An answer without a lifetime of its own (image text, BLS cells) has
    no usable_until and is usable while kept."""
    view = task.view(now)
    kind = kind_of(_method(task))
    parsed = parse_answer(task.request, task.solution) if task.solution is not None else None
    view["kind"] = kind.name if kind else None
    view["answer"] = parsed.fields if parsed else None
    view["answer_fits"] = parsed.fits if parsed else None
    if kind is not None and kind.lifetime is None:
        view["usable_until"] = None
        view["usable"] = task.solution is not None
    return view


def _method(task: Task) -> str | None:
    return task.request.method if task.request else None


def _last_check(task: Task) -> float | None:
    """The latest moment anyone asked res.php about the task (a read-through or a poll)."""
    checks = [at for at in (task.read_through_at, task.last_checked_at) if at is not None]
    return max(checks, default=None)


def _last_seen_unfinished(task: Task) -> float | None:
    """The provider finished after its last "not ready" answer, else after the submit."""
    return task.last_checked_at if task.last_checked_at is not None else task.submitted_at
