"""GetTaskFunction: GET /tasks/{task_id} returns the task's status and result."""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import StoreError
from pingback_guard.domain.task import normalise_task_id
from pingback_guard.handlers.principal import caller_principal
from pingback_guard.handlers.responses import json_response
from pingback_guard.logic.get_task import TaskQuery
from pingback_guard.observability import logger, tracer
from pingback_guard.settings import GetTaskSettings
from pingback_guard.wiring import dynamodb_client

settings = GetTaskSettings.from_env(os.environ)
query = TaskQuery(
    DynamoDbTaskStore(dynamodb_client(), settings.table), settings.admin_principal_arn
)


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = APIGatewayProxyEventV2(event)
    principal = caller_principal(request)
    if principal is None:
        return json_response(403, {"error": "forbidden"})
    try:
        task_id = normalise_task_id((request.path_parameters or {}).get("task_id", ""))
    except ValueError as error:
        return json_response(400, {"error": str(error)})
    try:
        view = query.view(task_id, now=time.time(), principal=principal)
    except StoreError as error:
        logger.error("task lookup failed", extra={"task_id": task_id, "reason": str(error)})
        return json_response(503, {"error": "task store unavailable; try again"})
    if view is None:
        return json_response(404, {"error": "unknown task", "task_id": task_id})
    return json_response(200, view)
