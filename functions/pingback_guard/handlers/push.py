"""PushFunction: the WebSocket API's routes ($connect, $disconnect, subscribe) and the result
event bus's rule target, which pushes each final result to its owner's connections."""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.connections import DynamoDbConnectionStore
from pingback_guard.data.push_reads import DynamoDbPushReads
from pingback_guard.domain.errors import StoreError
from pingback_guard.domain.task import normalise_task_id
from pingback_guard.handlers.principal import websocket_caller
from pingback_guard.logic.push import (
    InvalidSubscription,
    PushReport,
    PushService,
    ResultEvent,
    parse_subscription,
    result_of_event,
)
from pingback_guard.observability import instrumented, logger, metrics
from pingback_guard.push.sender import ManagementApiSender
from pingback_guard.settings.push import PushSettings

settings = PushSettings.from_env(os.environ)
_dynamodb = aws_clients.dynamodb_client()
service = PushService(
    DynamoDbConnectionStore(_dynamodb, settings.table.table_name),
    DynamoDbPushReads(_dynamodb, settings.table.table_name),
    ManagementApiSender(aws_clients.management_api_client(settings.management_endpoint)).send,
    connection_ttl_seconds=settings.connection_ttl_seconds,
    max_connections_per_owner=settings.max_connections_per_owner,
)

RESULT_DETAIL_TYPE = "Task Result"
METRIC_BY_COUNT = {
    "sent": "PushSent",
    "gone": "PushGone",
    "failed": "PushFailed",
    "no_connection": "PushNoConnection",
    # Not alarmed: a subscribe answer is the caller's own request.
    "answer_failed": "PushAnswerFailed",
}


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("detail-type") == RESULT_DETAIL_TYPE:
        return _deliver(event)
    request = event.get("requestContext") or {}
    kind, connection_id = request.get("eventType"), str(request.get("connectionId") or "")
    if not connection_id:
        return _status(400)
    if kind == "CONNECT":
        return _connect(event, connection_id)
    if kind == "DISCONNECT":
        service.disconnect(connection_id)
        metrics.add_metric(name="PushDisconnected", unit=MetricUnit.Count, value=1)
        return _status(200)
    return _subscribe(event, connection_id)


def _connect(event: dict[str, Any], connection_id: str) -> dict[str, Any]:
    owner = websocket_caller(event)
    if owner is None:
        return _status(403)
    if not service.connect(connection_id, owner, time.time()):
        metrics.add_metric(name="PushConnectRefused", unit=MetricUnit.Count, value=1)
        logger.warning("push connection refused: the principal holds the most allowed")
        return _status(429)
    metrics.add_metric(name="PushConnected", unit=MetricUnit.Count, value=1)
    return _status(200)


def _subscribe(event: dict[str, Any], connection_id: str) -> dict[str, Any]:
    try:
        task_ids = parse_subscription(event.get("body"))
    except InvalidSubscription as error:
        logger.warning("subscribe refused", extra={"reason": str(error)})
        return _status(400)
    _emit(service.subscribe(connection_id, task_ids, time.time()))
    return _status(200)


def _deliver(event: dict[str, Any]) -> dict[str, Any]:
    detail = event.get("detail") or {}
    try:
        task_id = normalise_task_id(detail.get("task_id"))
    except ValueError:
        logger.warning("result event without a task id; nothing pushed")
        return {"pushed": 0}
    result: ResultEvent = result_of_event(task_id, detail)
    try:
        report = service.deliver(result, time.time())
    except StoreError as error:
        # Raised: EventBridge retries the event (the worker's paced GET covers the wait).
        logger.error("push lookup failed", extra={"task_id": task_id, "reason": str(error)})
        raise
    _emit(report)
    return {"pushed": report.sent}


def _emit(report: PushReport) -> None:
    for name, metric in METRIC_BY_COUNT.items():
        if value := getattr(report, name):
            metrics.add_metric(name=metric, unit=MetricUnit.Count, value=value)


def _status(code: int) -> dict[str, Any]:
    return {"statusCode": code}
