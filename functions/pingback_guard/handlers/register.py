"""RegisterFunction: POST /pingback-urls issues a pingback URL to the caller; PUT
/tasks/{task_id} registers a task the caller submitted to the provider itself with that URL;
POST /smoke-tasks and DELETE /smoke-tasks/{task_id}: the smoke check's synthetic tasks
(logic/smoke.py), for the admin principal only."""

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
    ProviderError,
    SecretUnavailableError,
    StoreError,
)
from pingback_guard.domain.task import RegistrationOutcome, normalise_task_id
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
from pingback_guard.logic.pingback_secrets import CallbackAuthenticator, CapabilityLifetime
from pingback_guard.logic.register import (
    InvalidRegistrationError,
    RegisterService,
    RegistrationRequest,
    RegistrationWindow,
    UnknownAtProviderError,
    parse_registration,
)
from pingback_guard.logic.smoke import NotAdminError, SmokeService
from pingback_guard.observability import (
    count_claim_clash,
    count_provisional_discarded,
    instrumented,
    logger,
    metrics,
)
from pingback_guard.provider.captchaai import RetryPolicy
from pingback_guard.provider.configured_client import captchaai_client
from pingback_guard.settings.register import RegisterSettings

ISSUE_ROUTE = "POST /pingback-urls"
REGISTER_ROUTE = "PUT /tasks/{task_id}"
SMOKE_CREATE_ROUTE = "POST /smoke-tasks"
SMOKE_DELETE_ROUTE = "DELETE /smoke-tasks/{task_id}"
REGISTRATION_ERRORS = {
    "task_id": ApiError.INVALID_TASK_ID,
    "pingback_url": ApiError.INVALID_PINGBACK_URL,
    "body": ApiError.INVALID_BODY,
}
# A registration that lost to, or contests, another's task answers as a new one: the answer
# never tells whether the id was someone else's.
STATUS_OF_OUTCOME = {
    RegistrationOutcome.CREATED: 201,
    RegistrationOutcome.PROVISIONAL_DISCARDED: 201,
    RegistrationOutcome.CONTESTED: 201,
    RegistrationOutcome.HELD_ELSEWHERE: 201,
    RegistrationOutcome.SAME_AGAIN: 200,
}

settings = RegisterSettings.from_env(os.environ)
pingbacks = PingbackIssuer(settings.pingbacks)
capabilities = settings.pingbacks.callback_secret
authenticator = CallbackAuthenticator(
    pingbacks.read_secrets, CapabilityLifetime(capabilities.capability_max_age_seconds)
)
store = DynamoDbTaskStore(aws_clients.dynamodb_client(), settings.table)
service = RegisterService(
    store,
    pingbacks.pending,
    # One attempt: the worker waits on this answer, and its retry is the next PUT.
    captchaai_client(settings.provider, retry=RetryPolicy(attempts=1)),
    RegistrationWindow(capabilities.registration_window_seconds),
    on_provisional_discarded=count_provisional_discarded,
    on_claim_clash=count_claim_clash,
)
smoke = SmokeService(store, settings.admin_principal_arn, settings.table.provisional_ttl_seconds)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = APIGatewayProxyEventV2(event)
    owner = caller_principal(request)
    if owner is None:
        return _refused(403, ApiError.FORBIDDEN, "no IAM principal")
    try:
        if request.route_key == ISSUE_ROUTE:
            return _issue(request, owner)
        if request.route_key in {SMOKE_CREATE_ROUTE, SMOKE_DELETE_ROUTE}:
            return _smoke(request, owner)
        return _register(request, owner)
    except NotAdminError:
        return _refused(403, ApiError.FORBIDDEN, "smoke tasks are for AdminPrincipalArn only")
    except (SecretUnavailableError, StoreError, ProviderError) as error:
        metrics.add_metric(name="RegisterUnavailable", unit=MetricUnit.Count, value=1)
        logger.error("registration unavailable", extra={"reason": str(error)})
        return error_response(503, ApiError.UNAVAILABLE, "try again")


def _issue(request: APIGatewayProxyEventV2, owner: str) -> dict[str, Any]:
    handed_out = service.issue(
        pingbacks.base_url(request), pingbacks.read_secrets(False).current, owner
    )
    metrics.add_metric(name="PingbackUrlIssued", unit=MetricUnit.Count, value=1)
    # Register a task with it before expires_at; it registers one task, for this caller only.
    body = {"pingback_url": handed_out.url, "expires_at": int(handed_out.register_by)}
    return json_response(201, body)


def _smoke(request: APIGatewayProxyEventV2, owner: str) -> dict[str, Any]:
    if request.route_key == SMOKE_CREATE_ROUTE:
        created = smoke.create(
            owner, pingbacks.base_url(request), pingbacks.read_secrets(False).current
        )
        metrics.add_metric(name="SmokeTaskCreated", unit=MetricUnit.Count, value=1)
        logger.info("smoke task created", extra={"task_id": created.task_id})
        body = {
            "task_id": created.task_id,
            "pingback_url": created.pingback_url,
            "expires_at": int(created.expires_at),
        }
        return json_response(201, body)
    try:
        task_id = normalise_task_id((request.path_parameters or {}).get("task_id"))
    except ValueError:
        return _refused(400, ApiError.INVALID_TASK_ID, "task_id must be 1 to 20 digits")
    if not smoke.delete(owner, task_id):
        return _refused(404, ApiError.UNKNOWN_TASK, "no smoke task of this caller with this id")
    metrics.add_metric(name="SmokeTaskDeleted", unit=MetricUnit.Count, value=1)
    return json_response(200, {"task_id": task_id, "deleted": True})


def _register(request: APIGatewayProxyEventV2, owner: str) -> dict[str, Any]:
    try:
        registration = _parsed(request)
        logger.append_keys(task_id=registration.task_id)
        outcome = _recorded(registration, owner)
    except _Refusal as refusal:
        return _refused(refusal.status, refusal.error, refusal.reason)
    if outcome is RegistrationOutcome.DIFFERENT_DATA:
        metrics.add_metric(name="RegistrationConflict", unit=MetricUnit.Count, value=1)
        reason = "task already registered with different data"
        return error_response(409, ApiError.CONFLICT, reason)
    metrics.add_metric(name="TaskRegistered", unit=MetricUnit.Count, value=1)
    return json_response(STATUS_OF_OUTCOME[outcome], {"task_id": registration.task_id})


class _Refusal(Exception):
    def __init__(self, status: int, error: ApiError, reason: str) -> None:
        super().__init__(reason)
        self.status, self.error, self.reason = status, error, reason


def _parsed(request: APIGatewayProxyEventV2) -> RegistrationRequest:
    try:
        return parse_registration(
            (request.path_parameters or {}).get("task_id"), json_body(request, MAX_REQUEST_BYTES)
        )
    except InvalidBodyError as error:
        raise _Refusal(400, ApiError.INVALID_BODY, str(error)) from None
    except InvalidRegistrationError as error:
        raise _Refusal(400, REGISTRATION_ERRORS[error.field], str(error)) from None
    except InvalidFieldError as error:
        raise _Refusal(400, ApiError.INVALID_FIELD, error.reason) from None


def _recorded(registration: RegistrationRequest, owner: str) -> RegistrationOutcome:
    proof = authenticator.verify(registration.capability)
    if proof is None:
        reason = "pingback_url was not issued by this stack, or is too old"
        raise _Refusal(400, ApiError.INVALID_PINGBACK_URL, reason)
    try:
        return service.register(registration, proof, owner)
    except UnknownAtProviderError as error:
        raise _Refusal(404, ApiError.UNKNOWN_TASK, str(error)) from None
    except InvalidRegistrationError as error:
        raise _Refusal(400, REGISTRATION_ERRORS[error.field], str(error)) from None


def _refused(status: int, error: ApiError, reason: str) -> dict[str, Any]:
    metrics.add_metric(name="RegisterRejected", unit=MetricUnit.Count, value=1)
    logger.warning("registration refused", extra={"status": status, "reason": reason})
    return error_response(status, error, reason)
