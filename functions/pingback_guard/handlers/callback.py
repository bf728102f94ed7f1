"""CallbackFunction: the public pingback receiver (and the 2captcha domain check)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients, secret_readers
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import (
    InvalidCallbackError,
    ResultNotSafeError,
    SecretUnavailableError,
)
from pingback_guard.domain.task import TaskResult
from pingback_guard.handlers.responses import raw_body, text_response
from pingback_guard.logic.callback import CallbackOutcome, CallbackService
from pingback_guard.logic.pingback_request import CallbackRequest, parse_callback
from pingback_guard.logic.pingback_secrets import CallbackAuthenticator, CapabilityLifetime
from pingback_guard.observability import (
    instrumented,
    logger,
    metrics,
    token_stored,
)
from pingback_guard.queue.dead_letter import SqsDeadLetterQueue
from pingback_guard.settings.callback import CallbackSettings

VERIFICATION_ROUTE = "GET /2captcha.txt"

settings = CallbackSettings.from_env(os.environ)
# A capability counts until the longest time after its issue a provider may still deliver.
authenticator = CallbackAuthenticator(
    secret_readers.callback_secrets_reader(settings.callback_secret),
    CapabilityLifetime(settings.callback_secret.capability_max_age_seconds),
)


@cache
def task_store() -> DynamoDbTaskStore:
    return DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table)


@cache
def callback_service() -> CallbackService:
    """Made by the first pingback that proves its URL: the AWS clients cost about a third of a
    cold start, and forged, malformed and verification requests never need them."""
    return CallbackService(
        task_store(),
        SqsDeadLetterQueue(aws_clients.sqs_client(), settings.dead_letter_queue_url),
        token_stored(settings.table.token_lifetimes),
    )


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The raw event, not Powertools' APIGatewayProxyEventV2: importing that imports every event
    # class Powertools has, about a tenth of this function's cold start.
    if event["routeKey"] == VERIFICATION_ROUTE:
        metrics.add_metric(name="VerificationServed", unit=MetricUnit.Count, value=1)
        token = settings.verification_token
        return text_response(200, token) if token else text_response(404, "not found")
    try:
        result = _authenticated_result(event)
        logger.append_keys(task_id=result.task_id)
        outcome = callback_service().receive(result)
    except _Refused as refusal:
        metrics.add_metric(name="CallbackRejected", unit=MetricUnit.Count, value=1)
        logger.warning("callback rejected", extra={"status": refusal.status, "why": refusal.reason})
        return text_response(refusal.status, refusal.reason)
    except (SecretUnavailableError, ResultNotSafeError) as error:
        metrics.add_metric(name="CallbackUnavailable", unit=MetricUnit.Count, value=1)
        logger.error("callback not acknowledged", extra={"reason": str(error)})
        return text_response(503, "result not stored; try again")
    metrics.add_metric(name=outcome.value, unit=MetricUnit.Count, value=1)
    if outcome is CallbackOutcome.REJECTED:
        # A valid capability presented for a task it does not belong to, or a second id for
        # one capability's provisional result.
        metrics.add_metric(name="CallbackRejected", unit=MetricUnit.Count, value=1)
        logger.warning("callback rejected", extra={"status": 403, "why": "proof does not fit"})
        return text_response(403, "forbidden")
    # The outcome's metric says this at INFO already; the line is for a DEBUG stage.
    logger.debug("callback handled", extra={"outcome": outcome.value})
    return text_response(200, "OK")


def _authenticated_result(event: Mapping[str, Any]) -> TaskResult:
    proof = authenticator.verify((event.get("pathParameters") or {}).get("secret", ""))
    if proof is None:
        raise _Refused(403, "forbidden")
    body = raw_body(event)
    if body is None:
        raise _Refused(400, "body is not valid base64")
    try:
        return parse_callback(
            _callback_request(event, body), received_at=time.time(), nonce=proof.nonce
        )
    except InvalidCallbackError as error:
        raise _Refused(400, str(error)) from None


def _callback_request(event: Mapping[str, Any], body: bytes) -> CallbackRequest:
    headers = {str(name).lower(): value for name, value in (event.get("headers") or {}).items()}
    return CallbackRequest(
        method=str(event["requestContext"]["http"]["method"]).upper(),
        query=event.get("queryStringParameters") or {},
        content_type=headers.get("content-type", ""),
        body=body,
    )
