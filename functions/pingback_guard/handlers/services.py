"""The services the worker routes share, built once from a function's settings: the IAM routes
(POST /tasks, GET /tasks/{id}, report) and the in.php/res.php ones make them the same way, all of
a function's stores on its one DynamoDB client."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.data.poller_state import DynamoDbPollerState
from pingback_guard.data.request_budgets import DynamoDbRequestBudgets
from pingback_guard.handlers.pingbacks import PingbackIssuer
from pingback_guard.logic.get_task import PollerWatch, ReadThroughPolicy, TaskQuery
from pingback_guard.logic.poll_schedule import CheckSchedule, SolveTimes
from pingback_guard.logic.poller_wake import PollerWake
from pingback_guard.logic.report import ReportService
from pingback_guard.logic.request_budgets import Endpoint, KeyBudget, SharedBalance
from pingback_guard.logic.submit import SubmitService
from pingback_guard.observability import (
    count_poller_wake_failed,
    count_poller_woken,
    count_provisional_discarded,
    count_registration_replaced,
)
from pingback_guard.provider.configured_client import (
    ProviderOnFirstUse,
    captchaai_client,
    single_attempt_client,
)
from pingback_guard.queue.dead_letter import SqsDeadLetterQueue
from pingback_guard.settings.key_budget import KeyBudgetSettings
from pingback_guard.settings.provider import ProviderSettings
from pingback_guard.settings.submit import SubmitSettings
from pingback_guard.settings.table import TableSettings
from pingback_guard.settings.worker_tasks import GetTaskSettings
from pingback_guard.wake.poller import LambdaPollerWaker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

    from pingback_guard.provider.client import ProviderClient


def submit_service(
    settings: SubmitSettings, pingbacks: PingbackIssuer, dynamodb: DynamoDBClient
) -> SubmitService:
    return SubmitService(
        DynamoDbTaskStore(dynamodb, settings.table),
        captchaai_client(settings.provider),
        SqsDeadLetterQueue(aws_clients.sqs_client_on_first_use(), settings.dead_letter_queue_url),
        pingbacks.pending,
        on_provisional_discarded=count_provisional_discarded,
        on_registration_replaced=count_registration_replaced,
        after_recorded=_poller_wake(settings, dynamodb),
    )


def _poller_wake(settings: SubmitSettings, dynamodb: DynamoDBClient) -> Callable[[], object]:
    if not settings.wake_poller:
        return lambda: None
    wake = PollerWake(
        PollerWatch(DynamoDbPollerState(dynamodb, settings.table.table_name)),
        LambdaPollerWaker(aws_clients.lambda_client_on_first_use(), settings.poller_function_name),
        on_woken=count_poller_woken,
        on_failed=count_poller_wake_failed,
    )
    return wake.after_submit


def task_query(settings: GetTaskSettings, dynamodb: DynamoDBClient) -> TaskQuery:
    return TaskQuery(
        DynamoDbTaskStore(dynamodb, settings.table),
        # One attempt: a worker is waiting on this answer, and its next GET is the retry. Made
        # at the first read-through: most GETs never ask res.php.
        ProviderOnFirstUse(lambda: single_attempt_client(settings.provider)),
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
    provider: ProviderClient,
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


def key_budget(
    settings: KeyBudgetSettings, endpoint: Endpoint, dynamodb: DynamoDBClient
) -> KeyBudget:
    store = DynamoDbRequestBudgets(dynamodb, settings.table_name)
    return KeyBudget(store, endpoint, settings.limits)


def shared_balance(
    budgets: KeyBudgetSettings,
    provider: ProviderSettings,
    refresh_seconds: float,
    dynamodb: DynamoDBClient,
) -> SharedBalance:
    return SharedBalance(
        DynamoDbRequestBudgets(dynamodb, budgets.table_name),
        # One attempt: a worker is waiting, and every other request serves the cached answer.
        # Made at the first refresh: most res.php requests are gets.
        ProviderOnFirstUse(lambda: single_attempt_client(provider)),
        refresh_seconds,
    )
