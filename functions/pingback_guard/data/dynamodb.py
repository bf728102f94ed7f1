"""TaskStore on one DynamoDB table with a sparse, write-sharded due index.

Each part of the table has its own module, by what it stores: task records (tasks.py), results
(results.py), pingback URLs (capabilities.py), the due index and poll state (due_index.py), the
poller's leases (poller_lease.py, poller_helpers.py) and reports (reports.py), over the
shared requests of dynamodb_table.py. This class only puts them behind the one TaskStore
contract.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from pingback_guard.data.capabilities import PingbackUrls
from pingback_guard.data.due_index import DueIndex, due_shard_of
from pingback_guard.data.dynamodb_table import ItemTable
from pingback_guard.data.poller_helpers import PollerHelperLeases
from pingback_guard.data.poller_lease import PollerLeases
from pingback_guard.data.reports import ReportRecords
from pingback_guard.data.results import ResultRecords
from pingback_guard.data.tasks import TaskRecords
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
from pingback_guard.settings.table import TableSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


class DynamoDbTaskStore:
    def __init__(self, client: DynamoDBClient, settings: TableSettings) -> None:
        table = ItemTable(client, settings)
        self._tasks = TaskRecords(table)
        self._pingback_urls = PingbackUrls(table)
        self._results = ResultRecords(table, self._pingback_urls)
        self._due = DueIndex(table)
        self._lease = PollerLeases(table)
        self._helpers = PollerHelperLeases(table)
        self._reports = ReportRecords(table)

    def record_submission(self, task: NewTask) -> SubmissionOutcome:
        return self._tasks.record_submission(task)

    def record_registration(self, task: NewTask) -> RegistrationOutcome:
        return self._tasks.record_registration(task)

    def record_smoke_task(self, task: NewTask) -> bool:
        return self._tasks.record_smoke_task(task)

    def delete_smoke_task(self, task_id: str, owner: str) -> bool:
        return self._tasks.delete_smoke_task(task_id, owner)

    def get(self, task_id: str) -> Task | None:
        return self._tasks.get(task_id)

    def provider_accounts_of(self, task_ids: Sequence[str]) -> dict[str, str | None]:
        return self._tasks.provider_accounts_of(task_ids)

    def record_pingback_url(self, issued: IssuedPingbackUrl) -> None:
        self._pingback_urls.record_pingback_url(issued)

    def claim_pingback_url(
        self, nonce: str, owner: str, task_id: str, now: float
    ) -> PingbackUrlClaim:
        return self._pingback_urls.claim_pingback_url(nonce, owner, task_id, now)

    def record_result(self, result: TaskResult) -> StoreOutcome:
        return self._results.record_result(result)

    def record_solution(self, result: TaskResult) -> RecordedSolution:
        return self._results.record_solution(result)

    def record_failure(self, result: TaskResult) -> StoreOutcome:
        return self._results.record_failure(result)

    def due_tasks(
        self, now: float, limit: int, shards: Collection[int] | None = None
    ) -> list[DueTask]:
        return self._due.due_tasks(now, limit, shards)

    def next_due_at(
        self, after: float, until: float, shards: Collection[int] | None = None
    ) -> float | None:
        return self._due.next_due_at(after, until, shards)

    def due_shard_count(self) -> int:
        return self._due.shard_count

    def due_shard(self, task_id: str) -> int:
        return int(due_shard_of(task_id, self._due.shard_count))

    def acquire_helper_lease(self, group: int, holder: str, now: float, until: float) -> bool:
        return self._helpers.acquire_helper_lease(group, holder, now, until)

    def record_helper_load(self, group: int, holder: str, load_seconds: float) -> None:
        self._helpers.record_helper_load(group, holder, load_seconds)

    def release_helper_lease(self, group: int, holder: str, now: float) -> None:
        self._helpers.release_helper_lease(group, holder, now)

    def live_helpers(self, groups: int, now: float) -> dict[int, HelperLoad]:
        return self._helpers.live_helpers(groups, now)

    def reschedule_poll(
        self,
        task_id: str,
        due_at: float,
        poll_attempts: int,
        last_checked_at: float | None = None,
    ) -> bool:
        return self._due.reschedule_poll(task_id, due_at, poll_attempts, last_checked_at)

    def mark_expired(self, task_id: str, now: float) -> bool:
        return self._due.mark_expired(task_id, now)

    def claim_read_through(self, task_id: str, now: float, interval_seconds: float) -> bool:
        return self._due.claim_read_through(task_id, now, interval_seconds)

    def record_not_ready(self, task_id: str, checked_at: float) -> bool:
        return self._due.record_not_ready(task_id, checked_at)

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        return self._lease.acquire_poller_lease(holder, now, until)

    def claim_poller_succession(self, holder: str, now: float, until: float) -> bool:
        return self._lease.claim_poller_succession(holder, now, until)

    def mark_poller_busy(self, holder: str, busy_at: float) -> None:
        self._lease.mark_poller_busy(holder, busy_at)

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        self._lease.release_poller_lease(holder, now, solve_samples, busy_at)

    def claim_report(self, attempt: ReportAttempt) -> ReportClaim:
        return self._reports.claim_report(attempt)

    def confirm_report(self, task_id: str, claimed_at: float) -> bool:
        return self._reports.confirm_report(task_id, claimed_at)

    def release_report(self, task_id: str, claimed_at: float) -> bool:
        return self._reports.release_report(task_id, claimed_at)
