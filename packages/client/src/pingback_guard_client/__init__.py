"""Worker client of a pingback-guard stack (sync `Client`, asyncio `AsyncClient`)."""

from pingback_guard_client.aio import AsyncClient
from pingback_guard_client.client import Client, RetryPolicy
from pingback_guard_client.errors import (
    ApiError,
    CredentialsError,
    PingbackGuardError,
    ServiceUnavailable,
    TaskNotFound,
    TokenUnusable,
    Unsolvable,
    WaitTimeout,
)
from pingback_guard_client.models import PingbackUrl, Solution, TaskView
from pingback_guard_client.signing import signed_session
from pingback_guard_client.waiting import Pacing

__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "CredentialsError",
    "Pacing",
    "PingbackGuardError",
    "PingbackUrl",
    "RetryPolicy",
    "ServiceUnavailable",
    "Solution",
    "TaskNotFound",
    "TaskView",
    "TokenUnusable",
    "Unsolvable",
    "WaitTimeout",
    "signed_session",
]
