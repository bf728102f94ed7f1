"""ReplayFunction: drains the dead-letter queue, reporting partial batch failures."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import PingbackGuardError
from pingback_guard.logic.replay import RejectedMessageError, ReplayService
from pingback_guard.observability import (
    instrumented,
    logger,
    metrics,
    token_stored,
)
from pingback_guard.settings.replay import ReplaySettings

settings = ReplaySettings.from_env(os.environ)


store = DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table)


service = ReplayService(
    store,
    on_token_stored=token_stored(settings.table.token_lifetimes),
)
# A batch whose every record fails is still a partial-failure answer, not a function error:
# SQS retries those messages and parks them; the Errors alarm stays for real crashes.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def replay_record(record: SQSRecord) -> None:
    try:
        outcome = service.replay(record.body)
    except PingbackGuardError as error:
        if isinstance(error, RejectedMessageError):
            # Breaks the edge's rules: never applied; SQS retries it, then parks it.
            metrics.add_metric(name="ReplayRejected", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="ReplayFailed", unit=MetricUnit.Count, value=1)
        logger.warning(
            "replay failed; SQS will retry or park it",
            extra={
                "message_id": record.message_id,
                "receive_count": record.attributes.approximate_receive_count,
                "reason": str(error),
            },
        )
        raise
    metrics.add_metric(name=outcome.value, unit=MetricUnit.Count, value=1)
    logger.info("replayed", extra={"message_id": record.message_id, "outcome": outcome.value})


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=replay_record, processor=processor, context=context
    )
