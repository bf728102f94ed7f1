"""ReportFunction: POST /tasks/{task_id}/report {"correct": bool} -> reportgood / reportbad."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from pingback_guard import aws_clients
from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderRejectedError,
    StoreError,
)
from pingback_guard.domain.task import ReportClaim, ReportVerdict
from pingback_guard.handlers.principal import own_task_route
from pingback_guard.handlers.responses import (
    ApiError,
    InvalidBodyError,
    error_response,
    json_body,
    json_response,
    path_task_id,
)
from pingback_guard.handlers.services.tasks import report_service
from pingback_guard.logic.report import InvalidReportError, parse_report
from pingback_guard.observability import instrumented, logger, metrics
from pingback_guard.provider.configured_client import provider_accounts
from pingback_guard.settings.worker_tasks import ReportSettings

settings = ReportSettings.from_env(os.environ)
service = report_service(
    settings.table,
    provider_accounts(settings.provider),
    settings.report_window_seconds,
    settings.admin_principal_arn,
    aws_clients.dynamodb_client(),
)

REFUSALS = {
    ReportClaim.UNKNOWN_TASK: (
        404,
        ApiError.UNKNOWN_TASK,
        "no task with this task_id for this caller",
    ),
    ReportClaim.NOT_SOLVED: (409, ApiError.NOT_SOLVED, "the task has no solution to report"),
    ReportClaim.ALREADY_REPORTED: (409, ApiError.ALREADY_REPORTED, "the task was reported already"),
    ReportClaim.WINDOW_CLOSED: (
        410,
        ApiError.REPORT_WINDOW_CLOSED,
        "the provider no longer takes reports for this task",
    ),
}


class _BadRequest(Exception):
    def __init__(self, code: ApiError, reason: str) -> None:
        super().__init__(reason)
        self.code = code


@instrumented
@own_task_route
def handler(request: Mapping[str, Any], principal: str) -> dict[str, Any]:
    try:
        task_id, verdict = _parse(request)
    except _BadRequest as error:
        return error_response(400, error.code, str(error))
    logger.append_keys(task_id=task_id)
    try:
        claim = service.report(task_id, verdict, principal)
    except PingbackGuardError as error:
        return _unavailable(error)
    if claim is not ReportClaim.CLAIMED:
        return error_response(*REFUSALS[claim])
    metrics.add_metric(name=f"Reported{verdict.value.title()}", unit=MetricUnit.Count, value=1)
    return json_response(200, {"task_id": task_id, "reported": verdict.value})


def _parse(request: Mapping[str, Any]) -> tuple[str, ReportVerdict]:
    try:
        task_id = path_task_id(request)
    except ValueError as error:
        raise _BadRequest(ApiError.INVALID_TASK_ID, str(error)) from None
    try:
        document = json_body(request)
    except InvalidBodyError as error:
        raise _BadRequest(ApiError.INVALID_BODY, str(error)) from None
    try:
        return task_id, parse_report(document)
    except InvalidReportError as error:
        raise _BadRequest(ApiError.INVALID_FIELD, str(error)) from None


def _unavailable(error: PingbackGuardError) -> dict[str, Any]:
    """A provider refusal or account error is final (the report reached the provider and stays
    claimed: logic/report.py); otherwise nothing stays claimed and the worker may try again."""
    if isinstance(error, StoreError):
        logger.error("report not recorded", extra={"reason": str(error)})
        return error_response(503, ApiError.STORE_UNAVAILABLE, "try again")
    if isinstance(error, ProviderAccountError):
        metrics.add_metric(name="ProviderAccountError", unit=MetricUnit.Count, value=1)
    if isinstance(error, ProviderRejectedError | ProviderAccountError):
        metrics.add_metric(name="ReportRejected", unit=MetricUnit.Count, value=1)
        logger.warning("provider refused the report", extra={"reason": str(error)})
        return error_response(502, ApiError.PROVIDER_REJECTED, str(error))
    metrics.add_metric(name="ReportFailed", unit=MetricUnit.Count, value=1)
    logger.error("report not sent", extra={"reason": str(error)})
    return error_response(503, ApiError.PROVIDER_UNAVAILABLE, "try again")
