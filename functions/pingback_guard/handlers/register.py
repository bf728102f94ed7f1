"""RegisterFunction: POST /pingback-urls issues a per-task pingback URL; PUT /tasks/{task_id}
registers a task the worker submitted to the provider itself with that URL."""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import (
    APIGatewayProxyEventV2,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import SecretUnavailableError, StoreError
from pingback_guard.handlers.pingbacks import PingbackIssuer
from pingback_guard.handlers.principal import caller_principal
from pingback_guard.handlers.responses import (
    ApiError,
    InvalidBodyError,
    error_response,
    json_body,
    json_response,
)
from pingback_guard.kinds.registry import MAX_REQUEST_BYTES, InvalidFieldError
from pingback_guard.logic.pingback_secrets import CallbackAuthenticator
from pingback_guard.logic.register import (
    InvalidRegistrationError,
    RegisterService,
    RegistrationOutcome,
    parse_registration,
)
from pingback_guard.observability import (
    count_provisional_discarded,
    instrumented,
    logger,
    metrics,
)
from pingback_guard.settings import RegisterSettings

ISSUE_ROUTE = "POST /pingback-urls"
REGISTER_ROUTE = "PUT /tasks/{task_id}"
REGISTRATION_ERRORS = {
    "task_id": ApiError.INVALID_TASK_ID,
    "pingback_url": ApiError.INVALID_PINGBACK_URL,
    "body": ApiError.INVALID_BODY,
}
STATUS_OF_OUTCOME = {
    RegistrationOutcome.CREATED: 201,
    RegistrationOutcome.SAME_AGAIN: 200,
}

settings = RegisterSettings.from_env(os.environ)
pingbacks = PingbackIssuer(settings.pingbacks)
authenticator = CallbackAuthenticator(pingbacks.read_secrets)
service = RegisterService(
    DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table),
    pingbacks.pending,
    on_provisional_discarded=count_provisional_discarded,
)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = APIGatewayProxyEventV2(event)
    owner = caller_principal(request)
    if owner is None:
        return _refused(403, ApiError.FORBIDDEN, "no IAM principal")
    try:
        if request.route_key == ISSUE_ROUTE:
            return _issue(request)
        return _register(request, owner)
    except (SecretUnavailableError, StoreError) as error:
        metrics.add_metric(name="RegisterUnavailable", unit=MetricUnit.Count, value=1)
        logger.error("registration unavailable", extra={"reason": str(error)})
        return error_response(503, ApiError.UNAVAILABLE, "try again")


def _issue(request: APIGatewayProxyEventV2) -> dict[str, Any]:
    pingback = pingbacks.issue(request)
    metrics.add_metric(name="PingbackUrlIssued", unit=MetricUnit.Count, value=1)
    # Until then a pingback that beats the registration is kept provisionally.
    expires_at = int(time.time()) + settings.table.unregistered_result_ttl_seconds
    return json_response(201, {"pingback_url": pingback.url, "expires_at": expires_at})


def _register(request: APIGatewayProxyEventV2, owner: str) -> dict[str, Any]:
    try:
        registration = parse_registration(
            (request.path_parameters or {}).get("task_id"), json_body(request, MAX_REQUEST_BYTES)
        )
    except InvalidBodyError as error:
        return _refused(400, ApiError.INVALID_BODY, str(error))
    except InvalidRegistrationError as error:
        return _refused(400, REGISTRATION_ERRORS[error.field], str(error))
    except InvalidFieldError as error:
        return _refused(400, ApiError.INVALID_FIELD, error.reason)
    proof = authenticator.verify(registration.capability)
    if proof is None or proof.nonce is None:
        reason = "pingback_url was not issued by this stack"
        return _refused(400, ApiError.INVALID_PINGBACK_URL, reason)
    logger.append_keys(task_id=registration.task_id)
    outcome = service.register(registration, proof.nonce, owner)
    if outcome is RegistrationOutcome.DIFFERENT_DATA:
        metrics.add_metric(name="RegistrationConflict", unit=MetricUnit.Count, value=1)
        reason = "task already registered with different data"
        return error_response(409, ApiError.CONFLICT, reason)
    metrics.add_metric(name="TaskRegistered", unit=MetricUnit.Count, value=1)
    return json_response(STATUS_OF_OUTCOME[outcome], {"task_id": registration.task_id})


def _refused(status: int, error: ApiError, reason: str) -> dict[str, Any]:
    metrics.add_metric(name="RegisterRejected", unit=MetricUnit.Count, value=1)
    logger.warning("registration refused", extra={"status": status, "reason": reason})
    return error_response(status, error, reason)
