"""PingbackForwardFunction: a rule target on the result event bus. A final result of a task whose
worker gave its own pingback URL (in.php ``pingback=``) is sent there, as 2captcha would; a
failure is raised, so Lambda retries the event and then puts it on the failure queue."""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import PingbackGuardError
from pingback_guard.domain.task import normalise_task_id
from pingback_guard.forward.addresses import SystemResolver
from pingback_guard.forward.sender import HttpForwardSender
from pingback_guard.logic.forwarding import ForwardOutcome, ResultForwarder
from pingback_guard.observability import instrumented, logger, metrics
from pingback_guard.settings.forward import ForwardSettings

settings = ForwardSettings.from_env(os.environ)
forwarder = ResultForwarder(
    DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table),
    SystemResolver(),
    HttpForwardSender(),
    allow_loopback=settings.allow_loopback_pingbacks,
)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> None:
    detail = event.get("detail")
    try:
        task_id = normalise_task_id(detail.get("task_id") if isinstance(detail, dict) else None)
    except ValueError:
        logger.warning("result event without a task id: nothing to forward")
        return
    try:
        outcome = forwarder.forward(task_id, time.time())
    except PingbackGuardError as error:
        metrics.add_metric(name="PingbackForwardFailed", unit=MetricUnit.Count, value=1)
        logger.warning("forward failed; retried", extra={"task_id": task_id, "reason": str(error)})
        raise
    if outcome is ForwardOutcome.REFUSED_ADDRESS:
        logger.warning(
            "forward refused: the pingback host is not public", extra={"task_id": task_id}
        )
    metrics.add_metric(name=outcome.value, unit=MetricUnit.Count, value=1)
