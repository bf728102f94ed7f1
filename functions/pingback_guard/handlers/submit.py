"""SubmitFunction: POST /tasks sends a CAPTCHA to the provider and records it PENDING."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard import aws_clients
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
from pingback_guard.handlers.responses import (
    ApiError,
    InvalidBodyError,
    error_response,
    json_body,
    json_response,
)
from pingback_guard.handlers.services.submit import submit_service
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.kinds.registry import MAX_REQUEST_BYTES, InvalidFieldError
from pingback_guard.logic.pacing import paced
from pingback_guard.observability import (
    count_provider_threads_busy,
    instrumented,
    logger,
    metrics,
    note_provider_account_refused,
)
from pingback_guard.provider.configured_client import provider_accounts
from pingback_guard.settings.submit import SubmitSettings

settings = SubmitSettings.from_env(os.environ)
pingbacks = PingbackIssuer(settings.pingbacks)
service = submit_service(
    settings,
    pingbacks,
    aws_clients.dynamodb_client(),
    provider_accounts(
        settings.provider,
        on_threads_busy=count_provider_threads_busy,
        on_account_refused=note_provider_account_refused,
    ),
)


@instrumented
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = event
    try:
        owner, captcha = _caller_and_request(request)
    except _Refusal as refusal:
        return _refused(refusal.status, refusal.error, refusal.reason)
    try:
        task = service.submit(captcha, pingbacks.issue(request), owner)
    except ProviderRejectedError as error:
        return _refused(422, ApiError.PROVIDER_REJECTED, str(error))
    except ProviderAccountError as error:
        metrics.add_metric(name="ProviderAccountError", unit=MetricUnit.Count, value=1)
        logger.error("provider account error", extra={"reason": str(error)})
        return _refused(502, ApiError.PROVIDER_ACCOUNT_ERROR, "provider account error")
    except (ProviderRetryableError, SecretUnavailableError) as error:
        metrics.add_metric(name="ProviderRetryableError", unit=MetricUnit.Count, value=1)
        return _refused(503, ApiError.PROVIDER_UNAVAILABLE, f"temporarily unavailable: {error}")
    except TaskNotRecordedError as error:
        metrics.add_metric(name="SubmitNotRecorded", unit=MetricUnit.Count, value=1)
        logger.error("task accepted but not recorded", extra={"task_id": error.task_id})
        reason = "accepted by the provider but not recorded"
        return error_response(503, ApiError.NOT_RECORDED, reason, task_id=error.task_id)
    metrics.add_metric(name="TaskSubmitted", unit=MetricUnit.Count, value=1)
    # DEBUG: the TaskSubmitted metric and the 202 already record it; log bytes are a cost per task.
    logger.debug("task submitted", extra={"task_id": task.task_id})
    # When to look first: the likely ready moment.
    view = paced(
        {"task_id": task.task_id, "status": "PENDING", "submitted_at": task.submitted_at},
        service.pending.first_look_at(task),
        task.submitted_at,
    )
    return json_response(202, view, retry_after=view["retry_after"])


class _Refusal(Exception):
    def __init__(self, status: int, error: ApiError, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.error = error
        self.reason = reason


def _caller_and_request(request: Mapping[str, Any]) -> tuple[str, CaptchaRequest]:
    owner = caller_principal(request)
    if owner is None:
        raise _Refusal(403, ApiError.FORBIDDEN, "no IAM principal")
    try:
        return owner, request_from_json(json_body(request, MAX_REQUEST_BYTES))
    except InvalidBodyError as error:
        raise _Refusal(400, ApiError.INVALID_BODY, str(error)) from None
    except InvalidFieldError as error:
        raise _Refusal(400, ApiError.INVALID_FIELD, error.reason) from None


def _refused(status: int, error: ApiError, reason: str) -> dict[str, Any]:
    metrics.add_metric(name="SubmitRejected", unit=MetricUnit.Count, value=1)
    logger.warning("submit refused", extra={"status": status, "reason": reason})
    return error_response(status, error, reason)
