"""What can go wrong for a worker, one exception type per thing it would handle differently."""

from __future__ import annotations


class PingbackGuardError(Exception):
    """Base of every error of this client."""


class ApiError(PingbackGuardError):
    """The stack refused the request (4xx): `error` is its snake_case code, `status` HTTP's."""

    def __init__(self, status: int, error: str, reason: str | None = None) -> None:
        super().__init__(f"HTTP {status} {error}" + (f": {reason}" if reason else ""))
        self.status = status
        self.error = error
        self.reason = reason


class TaskNotFound(ApiError):
    """No such task, or it belongs to another principal."""


class Unsolvable(PingbackGuardError):
    """The task ended without a token (FAILED or EXPIRED): submit it again if still needed."""

    def __init__(self, task_id: str, status: str, error: str | None) -> None:
        super().__init__(f"task {task_id} ended {status}" + (f" ({error})" if error else ""))
        self.task_id = task_id
        self.status = status
        self.error = error


class TokenUnusable(PingbackGuardError):
    """The task was solved, but its token had expired by the time it reached the worker."""

    def __init__(self, task_id: str, usable_until: float | None) -> None:
        super().__init__(f"task {task_id}: token no longer usable (usable until {usable_until})")
        self.task_id = task_id
        self.usable_until = usable_until


class WaitTimeout(PingbackGuardError):
    """No final result within the time the caller was willing to wait (the task may still end)."""

    def __init__(self, task_id: str, timeout: float) -> None:
        super().__init__(f"task {task_id}: no result within {timeout:g} s")
        self.task_id = task_id
        self.timeout = timeout


class ServiceUnavailable(PingbackGuardError):
    """The stack did not answer, or kept answering 429/503 after the bounded retries.

    `task_id` is set when a submit was accepted by the provider but not recorded by the stack.
    """

    def __init__(self, message: str, task_id: str | None = None) -> None:
        super().__init__(message)
        self.task_id = task_id


class CredentialsError(PingbackGuardError):
    """No AWS credentials, or the stack refused the signature (HTTP 403)."""
