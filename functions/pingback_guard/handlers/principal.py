"""Who is calling: the IAM principal API Gateway verified (routes with IAM auth only).

Every task route needs it: submit records it as the task's ``owner``, reads and reports are
allowed to that owner (or the stack's admin principal). A caller with an assumed role is the
role (domain/principals.py), whatever its session name. API Gateway never invokes an IAM route
without it; a missing one is refused (403) rather than trusted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from pingback_guard.domain.principals import owner_of
from pingback_guard.domain.task import is_clean_text
from pingback_guard.handlers.responses import ApiError, error_response

MAX_PRINCIPAL_ARN_LENGTH = 2048


def caller_principal(event: Mapping[str, Any]) -> str | None:
    """``requestContext.authorizer.iam.userArn``, or None when absent or not a usable ARN."""
    return _principal_arn(_path(event, "requestContext", "authorizer", "iam", "userArn"))


def websocket_caller(event: Mapping[str, Any]) -> str | None:
    """A WebSocket API's `$connect` with IAM auth: ``requestContext.identity.userArn``."""
    return _principal_arn(_path(event, "requestContext", "identity", "userArn"))


def _principal_arn(arn: object) -> str | None:
    """The owner the caller's ARN stands for (an assumed role's session counts as the role)."""
    if not is_clean_text(arn) or not str(arn).startswith("arn:"):
        return None
    text = str(arn)
    return owner_of(text) if len(text) <= MAX_PRINCIPAL_ARN_LENGTH else None


def own_task_route(
    route: Callable[[Mapping[str, Any], str], dict[str, Any]],
) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """A route on a worker's own tasks, given the request (the raw payload 2.0 event: not
    Powertools' APIGatewayProxyEventV2, whose import imports every event class Powertools has,
    about a tenth of a cold start) and its caller; 403 without one."""

    @functools.wraps(route)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        principal = caller_principal(event)
        if principal is None:
            return error_response(403, ApiError.FORBIDDEN, "no IAM principal")
        return route(event, principal)

    return handler


def _path(document: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document
