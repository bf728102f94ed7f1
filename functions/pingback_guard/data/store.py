"""The interface every piece of logic uses to read and write tasks."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from pingback_guard.domain.lease import HelperLoad, PollerLease
from pingback_guard.domain.task import (
    DueTask,
    IssuedPingbackUrl,
    NewTask,
    PingbackUrlClaim,
    RecordedSolution,
    RegistrationOutcome,
    ReportAttempt,
    ReportClaim,
    StoreOutcome,
    SubmissionOutcome,
    Task,
    TaskResult,
)


class TaskStore(Protocol):
    def record_submission(self, task: NewTask) -> SubmissionOutcome:
        """Record this stack's own submit PENDING; never clobbers a result its own pingback
        stored first; replaces any worker's registration of the id and a provisional result of
        another nonce."""

    def record_registration(self, task: NewTask) -> RegistrationOutcome:
        """Record a worker's registration PENDING, unless a submit holds the id; a second
        registration of a PENDING one makes both claims until a pingback decides."""

    def record_smoke_task(self, task: NewTask) -> bool:
        """A synthetic task of the smoke check: PENDING under an id nothing holds, never due (the
        poller never sees it), kept one retention window; False when the id is taken."""

    def delete_smoke_task(self, task_id: str, owner: str) -> bool:
        """Delete ``owner``'s synthetic task, whatever its status; False when ``task_id`` is no
        smoke task of ``owner`` (nothing deleted)."""

    def record_pingback_url(self, issued: IssuedPingbackUrl) -> None:
        """Who a pingback URL was issued to, and until when it may register a task."""

    def claim_pingback_url(
        self, nonce: str, owner: str, task_id: str, now: float
    ) -> PingbackUrlClaim:
        """The URL registers ``task_id`` (again, for the same id): only for the principal it was
        issued to, only one id, only until its register_by."""

    def record_result(self, result: TaskResult) -> StoreOutcome:
        """First solution wins; works for a task the table does not know yet."""

    def record_solution(self, result: TaskResult) -> RecordedSolution:
        """record_result, and the task as the write stored it (its kind, without a read)."""

    def record_failure(self, result: TaskResult) -> StoreOutcome:
        """Mark FAILED with the provider's error, unless a solution is already stored."""

    def mark_expired(self, task_id: str, now: float) -> bool:
        """PENDING -> EXPIRED; False when the task was no longer PENDING."""

    def reschedule_poll(
        self,
        task_id: str,
        due_at: float,
        poll_attempts: int,
        last_checked_at: float | None = None,
    ) -> bool:
        """Move a PENDING task's next poll (and record its last "not ready" answer, if given);
        False when it was no longer PENDING."""

    def get(self, task_id: str) -> Task | None: ...

    def provider_accounts_of(self, task_ids: Sequence[str]) -> dict[str, str | None]:
        """Each task's provider account (None: account 1), read in batches (the poller's, with
        more than one account: the due index does not hold it)."""

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        """PENDING tasks due at or before ``now``, at most ``limit``, never by Scan; only those
        in the due index ``shards``, when given."""

    def next_due_at(
        self, after: float, until: float, shards: Collection[int] | None = None
    ) -> float | None:
        """The earliest due time in (after, until] of a PENDING task (in ``shards``, when
        given), None if there is none."""

    def due_shard_count(self) -> int:
        """How many shards the due index spreads PENDING tasks over."""

    def due_shard(self, task_id: str) -> int:
        """The due index shard a task's poll state is in."""

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        """Take the poller lease until ``until`` if it is free (expired or released); taken, it
        ends any claim to succeed the last holder."""

    def claim_poller_succession(self, holder: str, now: float, until: float) -> bool:
        """Be the one invocation that waits to take the lease when its holder stops, until
        ``until``: True unless another's claim stands (a claim taken before ``now`` and not
        ended by a new holder)."""

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        """Free the lease if ``holder`` still has it, keeping what the poller learned and when it
        last had a task to check."""

    def mark_poller_busy(self, holder: str, busy_at: float) -> None:
        """Say that a holder has a task to check since ``busy_at``, if ``holder`` still has the
        lease (else nothing)."""

    def acquire_helper_lease(self, group: int, holder: str, now: float, until: float) -> bool:
        """Take helper group ``group``'s lease until ``until`` if it is free."""

    def record_helper_load(self, group: int, holder: str, load_seconds: float) -> None:
        """Keep a helper's last sweep load in its lease item, if ``holder`` still has it."""

    def release_helper_lease(self, group: int, holder: str, now: float) -> None:
        """Free helper group ``group``'s lease if ``holder`` still has it."""

    def live_helpers(self, groups: int, now: float) -> dict[int, HelperLoad]:
        """The helper groups among 1..``groups`` whose lease is held past ``now``."""

    def claim_read_through(self, task_id: str, now: float, interval_seconds: float) -> bool:
        """Guard of a worker-triggered res.php check: True for at most one caller per interval,
        and only while the task is PENDING."""

    def record_not_ready(self, task_id: str, checked_at: float) -> bool:
        """A "not ready" answer at ``checked_at`` (last_checked_at never moves back); False when
        the task was no longer PENDING."""

    def claim_report(self, attempt: ReportAttempt) -> ReportClaim:
        """The one report of a solved task finished at or after ``window_start``. The claim is a
        lease until confirmed, so a report the provider never got can be tried again. With an
        ``owner``, only that principal's task (or one recorded before owners) counts: any other
        answers UNKNOWN_TASK, as for a task that does not exist."""

    def confirm_report(self, task_id: str, claimed_at: float) -> bool:
        """The provider took the report claimed at ``claimed_at``: it is final."""

    def release_report(self, task_id: str, claimed_at: float) -> bool:
        """The provider did not take the report claimed at ``claimed_at``: forget the claim."""
