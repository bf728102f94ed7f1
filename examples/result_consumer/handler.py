"""ResultConsumerFunction: a rule target on the result event bus; applies each result once.

The idempotency key is the result itself (task id + final status), not the event id: a result
re-published by the pipe arrives as a new event with a new id, and must still apply once.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from result_consumer.applied import AppliedResults
from result_consumer.event import ResultEvent
from result_consumer.settings import ConsumerSettings

logger = Logger()
settings = ConsumerSettings.from_env(os.environ)
dynamodb = boto3.client("dynamodb")
persistence = DynamoDBPersistenceLayer(
    table_name=settings.idempotency_table_name, boto3_client=dynamodb
)
idempotency = IdempotencyConfig(
    event_key_jmespath="detail.[task_id, status]",
    raise_on_no_idempotency_key=True,
    expires_after_seconds=settings.idempotency_seconds,
)
applied = AppliedResults(dynamodb, settings.applied_table_name)


@logger.inject_lambda_context(log_event=False, clear_state=True)
@idempotent(config=idempotency, persistence_store=persistence)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = ResultEvent.from_event(event)
    logger.append_keys(task_id=result.task_id)
    if applied.apply(result):
        logger.info("result applied", extra={"status": result.status, "via": result.delivered_via})
    else:
        logger.warning("result already applied: repeat refused", extra={"status": result.status})
    return {"task_id": result.task_id, "status": result.status, "applied": True}
