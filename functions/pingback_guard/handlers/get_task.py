"""GetTaskFunction: GET /tasks/{task_id} returns the task's status and result; for a PENDING task
likely solved by now it first checks res.php (read-through, on the poller's growing gaps)."""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import (
    APIGatewayProxyEventV2,
)

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import StoreError
from pingback_guard.handlers.principal import own_task_route
from pingback_guard.handlers.responses import (
    ApiError,
    error_response,
    json_response,
    path_task_id,
)
from pingback_guard.logic.get_task import Lookup, ReadThroughOutcome, ReadThroughPolicy, TaskQuery
from pingback_guard.logic.poll_schedule import CheckSchedule, SolveTimes
from pingback_guard.observability import emit_delivery, instrumented, logger, metrics
from pingback_guard.provider.captchaai import RetryPolicy
from pingback_guard.provider.configured_client import captchaai_client
from pingback_guard.settings import GetTaskSettings

settings = GetTaskSettings.from_env(os.environ)
query = TaskQuery(
    DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table),
    # One attempt: a worker is waiting on this answer, and its next GET is the retry.
    captchaai_client(settings.provider, retry=RetryPolicy(attempts=1)),
    ReadThroughPolicy(
        CheckSchedule(
            settings.read_through_interval_seconds, settings.read_through_max_gap_seconds
        ),
        SolveTimes(default_seconds=settings.expected_solve_seconds),
    ),
    admin_principal_arn=settings.admin_principal_arn,
)


@instrumented
@own_task_route
def handler(request: APIGatewayProxyEventV2, principal: str) -> dict[str, Any]:
    try:
        task_id = path_task_id(request)
    except ValueError as error:
        return error_response(400, ApiError.INVALID_TASK_ID, str(error))
    try:
        found = query.look(task_id, now=time.time(), principal=principal)
    except StoreError as error:
        logger.error("task lookup failed", extra={"task_id": task_id, "reason": str(error)})
        return error_response(503, ApiError.STORE_UNAVAILABLE, "task store unavailable; try again")
    if found is None:
        reason = "no task with this task_id for this caller"
        return error_response(404, ApiError.UNKNOWN_TASK, reason, task_id=task_id)
    _record_read_through(task_id, found)
    return json_response(200, found.view, retry_after=found.view.get("retry_after"))


def _record_read_through(task_id: str, found: Lookup) -> None:
    if found.read_through is None:
        return
    metrics.add_metric(name=found.read_through.value, unit=MetricUnit.Count, value=1)
    if found.delivery is not None:
        emit_delivery(found.delivery)
    if found.read_through in {ReadThroughOutcome.ERROR, ReadThroughOutcome.ACCOUNT_ERROR}:
        logger.warning(
            "read-through failed; answered PENDING",
            extra={"task_id": task_id, "reason": found.error},
        )
