"""The submit service of POST /tasks and in.php, with the poller's wake after it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.data.poller_state import DynamoDbPollerState
from pingback_guard.handlers.pingbacks import PingbackIssuer
from pingback_guard.logic.get_task import PollerWatch
from pingback_guard.logic.poller_wake import PollerWake
from pingback_guard.logic.submit import SubmitService
from pingback_guard.observability import (
    count_poller_wake_failed,
    count_poller_woken,
    count_provisional_discarded,
    count_registration_replaced,
)
from pingback_guard.queue.dead_letter import SqsDeadLetterQueue
from pingback_guard.settings.submit import SubmitSettings
from pingback_guard.wake.poller import LambdaPollerWaker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

    from pingback_guard.logic.accounts import ProviderAccounts


def submit_service(
    settings: SubmitSettings,
    pingbacks: PingbackIssuer,
    dynamodb: DynamoDBClient,
    provider: ProviderAccounts,
) -> SubmitService:
    return SubmitService(
        DynamoDbTaskStore(dynamodb, settings.table),
        provider,
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
