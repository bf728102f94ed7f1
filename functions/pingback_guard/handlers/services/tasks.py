"""The reads of a worker's own tasks (GET /tasks/{id}, res.php get) and the report on one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.data.poller_state import DynamoDbPollerState
from pingback_guard.logic.get_task import PollerWatch, ReadThroughPolicy, TaskQuery
from pingback_guard.logic.poll_schedule import CheckSchedule, SolveTimes
from pingback_guard.logic.report import ReportService
from pingback_guard.provider.configured_client import accounts_on_first_use
from pingback_guard.settings.table import TableSettings
from pingback_guard.settings.worker_tasks import GetTaskSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

    from pingback_guard.logic.accounts import ProviderAccounts


def task_query(settings: GetTaskSettings, dynamodb: DynamoDBClient) -> TaskQuery:
    return TaskQuery(
        DynamoDbTaskStore(dynamodb, settings.table),
        # One attempt: a worker is waiting on this answer, and its next GET is the retry. Made
        # at the first read-through: most GETs never ask res.php. Each task is read through
        # its own provider account.
        accounts_on_first_use(settings.provider, single_attempt=True),
        ReadThroughPolicy(
            CheckSchedule(
                settings.read_through_interval_seconds,
                settings.read_through_max_gap_seconds,
                settings.poll_sweep_interval_seconds,
            ),
            SolveTimes(default_seconds=settings.expected_solve_seconds),
        ),
        admin_principal_arn=settings.admin_principal_arn,
        poller=PollerWatch(DynamoDbPollerState(dynamodb, settings.table.table_name)),
    )


def report_service(
    table: TableSettings,
    provider: ProviderAccounts,
    window_seconds: float,
    admin_principal_arn: str,
    dynamodb: DynamoDBClient,
) -> ReportService:
    return ReportService(
        DynamoDbTaskStore(dynamodb, table),
        provider,
        window_seconds,
        admin_principal_arn=admin_principal_arn,
    )
