"""GetTaskFunction: GET /tasks/{task_id} returns the task's status and result; for a PENDING task
likely solved by now it first checks res.php (read-through, on the poller's growing gaps)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from pingback_guard import aws_clients
from pingback_guard.domain.errors import StoreError
from pingback_guard.handlers.principal import own_task_route
from pingback_guard.handlers.read_through import record_read_through
from pingback_guard.handlers.responses import (
    ApiError,
    error_response,
    json_response,
    path_task_id,
)
from pingback_guard.handlers.services.tasks import task_query
from pingback_guard.observability import instrumented, logger
from pingback_guard.settings.worker_tasks import GetTaskSettings

settings = GetTaskSettings.from_env(os.environ)
query = task_query(settings, aws_clients.dynamodb_client())


@instrumented
@own_task_route
def handler(request: Mapping[str, Any], principal: str) -> dict[str, Any]:
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
    record_read_through(task_id, found)
    return json_response(200, found.view, retry_after=found.view.get("retry_after"))
