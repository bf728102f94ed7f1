"""SubmitFunction: POST /tasks sends a CAPTCHA to the provider and records it PENDING."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import (
    APIGatewayProxyEventV2,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderRejectedError,
    ProviderRetryableError,
    SecretUnavailableError,
    TaskNotRecordedError,
)
from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.handlers.pingbacks import PingbackIssuer
from pingback_guard.handlers.principal import caller_principal
from pingback_guard.handlers.responses import InvalidBodyError, json_body, json_response
from pingback_guard.logic.submit import (
    InvalidSubmissionError,
    SubmitService,
    parse_submission,
)
from pingback_guard.observability import (
    count_provisional_discarded,
    count_registration_replaced,
    instrumented,
    logger,
    metrics,
)
from pingback_guard.provider.configured_client import captchaai_client
from pingback_guard.queue.dead_letter import SqsDeadLetterQueue
from pingback_guard.settings import SubmitSettings

settings = SubmitSettings.from_env(os.environ)
pingbacks = PingbackIssuer(settings.pingbacks)
service = SubmitService(
    DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table),
    captchaai_client(settings.provider),
    SqsDeadLetterQueue(aws_clients.sqs_client(), settings.dead_letter_queue_url),
    pingbacks.pending,
    on_provisional_discarded=count_provisional_discarded,
    on_registration_replaced=count_registration_replaced,
)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = APIGatewayProxyEventV2(event)
    try:
        owner, captcha = _caller_and_request(request)
    except _Refusal as refusal:
        return _refused(refusal.status, refusal.reason)
    try:
        task = service.submit(captcha, pingbacks.issue(request), owner)
    except ProviderRejectedError as error:
        return _refused(422, str(error))
    except ProviderAccountError as error:
        metrics.add_metric(name="ProviderAccountError", unit=MetricUnit.Count, value=1)
        logger.error("provider account error", extra={"reason": str(error)})
        return _refused(502, "provider account error")
    except (ProviderRetryableError, SecretUnavailableError) as error:
        metrics.add_metric(name="ProviderRetryableError", unit=MetricUnit.Count, value=1)
        return _refused(503, f"temporarily unavailable: {error}")
    except TaskNotRecordedError as error:
        metrics.add_metric(name="SubmitNotRecorded", unit=MetricUnit.Count, value=1)
        logger.error("task accepted but not recorded", extra={"task_id": error.task_id})
        body = {"error": "accepted by the provider but not recorded", "task_id": error.task_id}
        return json_response(503, body)
    metrics.add_metric(name="TaskSubmitted", unit=MetricUnit.Count, value=1)
    # DEBUG: the TaskSubmitted metric and the 202 already record it; log bytes are a cost per task.
    logger.debug("task submitted", extra={"task_id": task.task_id})
    return json_response(
        202,
        {"task_id": task.task_id, "status": "PENDING", "submitted_at": task.submitted_at},
    )


class _Refusal(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _caller_and_request(request: APIGatewayProxyEventV2) -> tuple[str, CaptchaRequest]:
    owner = caller_principal(request)
    if owner is None:
        raise _Refusal(403, "no IAM principal")
    try:
        return owner, parse_submission(json_body(request))
    except (InvalidSubmissionError, InvalidBodyError) as error:
        raise _Refusal(400, f"invalid request: {error}") from None


def _refused(status: int, reason: str) -> dict[str, Any]:
    metrics.add_metric(name="SubmitRejected", unit=MetricUnit.Count, value=1)
    logger.warning("submit refused", extra={"status": status, "reason": reason})
    return json_response(status, {"error": reason})
