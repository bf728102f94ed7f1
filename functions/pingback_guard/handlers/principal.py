"""Who is calling: the IAM principal API Gateway verified (routes with IAM auth only).

Every task route needs it: submit records it as the task's ``owner``, reads and reports are
allowed to that owner (or the stack's admin principal). API Gateway never invokes an IAM route
without it; a missing one is refused (403) rather than trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import (
    APIGatewayProxyEventV2,
)

from pingback_guard.domain.task import is_clean_text

MAX_PRINCIPAL_ARN_LENGTH = 2048


def caller_principal(event: APIGatewayProxyEventV2 | Mapping[str, Any]) -> str | None:
    """``requestContext.authorizer.iam.userArn``, or None when absent or not a usable ARN."""
    raw = event.raw_event if isinstance(event, APIGatewayProxyEventV2) else event
    arn = _path(raw, "requestContext", "authorizer", "iam", "userArn")
    if not is_clean_text(arn) or not str(arn).startswith("arn:"):
        return None
    text = str(arn)
    return text if len(text) <= MAX_PRINCIPAL_ARN_LENGTH else None


def _path(document: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document
