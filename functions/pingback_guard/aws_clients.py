"""The real AWS clients the handlers inject into the logic (the secret readers are in
secret_readers.py: a function that reads no secret never imports Powertools Parameters)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_sqs.client import SQSClient

    from pingback_guard.settings.poller import StoreCallSettings

# A pingback waits on these calls: fail fast and let the dead-letter queue or the poller take over.
FAST_AWS_CONFIG = Config(
    connect_timeout=2,
    read_timeout=3,
    retries={"mode": "standard", "total_max_attempts": 3},
)


def dynamodb_client(config: Config = FAST_AWS_CONFIG) -> DynamoDBClient:
    return boto3.client("dynamodb", config=config)


def bounded_config(calls: StoreCallSettings) -> Config:
    """A client whose every request ends within ``calls.bound_seconds``, retries included
    (standard mode: https://docs.aws.amazon.com/boto3/latest/guide/retries.html)."""
    return Config(
        connect_timeout=calls.connect_timeout_seconds,
        read_timeout=calls.read_timeout_seconds,
        retries={"mode": "standard", "total_max_attempts": calls.max_attempts},
    )


# A submit a worker waits on makes this call: one attempt, bounded to 2 s; the poller's schedule
# is the net when it fails.
WAKE_CONFIG = Config(
    connect_timeout=1,
    read_timeout=1,
    retries={"mode": "standard", "total_max_attempts": 1},
)


def sqs_client() -> SQSClient:
    return boto3.client("sqs", config=FAST_AWS_CONFIG)


class _MadeOnFirstUse:
    """A client made at its first call, not at cold start: creating one loads its service
    model (tens of milliseconds), worth paying only on a path that calls it."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = self._make()
        return getattr(self._client, name)


def sqs_client_on_first_use() -> SQSClient:
    """For a submit, which sends to the dead-letter queue only when the table refuses."""
    return cast("SQSClient", _MadeOnFirstUse(sqs_client))


def lambda_client_on_first_use() -> Any:
    """For the poller's wake, which most submits never make, and its helpers' start."""
    return _MadeOnFirstUse(lambda: boto3.client("lambda", config=WAKE_CONFIG))


def management_api_client(endpoint_url: str) -> Any:
    """API Gateway's Management API (@connections) of one WebSocket API stage, made at the
    first post ($connect and $disconnect never post)."""
    return _MadeOnFirstUse(
        lambda: boto3.client(
            "apigatewaymanagementapi", endpoint_url=endpoint_url, config=FAST_AWS_CONFIG
        )
    )
