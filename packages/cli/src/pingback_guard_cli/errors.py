"""Failures an operator must tell apart, each with its own exit code."""

from __future__ import annotations

from enum import IntEnum

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    STACK_NOT_FOUND = 3
    NO_CREDENTIALS = 4
    ACCESS_DENIED = 5
    NOT_FOUND = 6
    UNREACHABLE = 7
    NEEDS_ATTENTION = 8
    """`status` and `preflight`: the command worked and found something to act on."""


class CliFailure(Exception):
    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


_ACCESS_DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}
)
_BAD_CREDENTIALS = frozenset(
    {"InvalidClientTokenId", "UnrecognizedClientException", "ExpiredToken", "ExpiredTokenException"}
)


def failure_of(error: Exception) -> CliFailure:
    """What to tell the operator about an AWS error (never request or response contents)."""
    if isinstance(error, CliFailure):
        return error
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return CliFailure(
            ExitCode.NO_CREDENTIALS,
            "no AWS credentials: configure a profile (aws configure / aws sso login) or set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        )
    if isinstance(error, NoRegionError):
        return CliFailure(ExitCode.USAGE, "no AWS region: pass --region or set AWS_REGION")
    if isinstance(error, EndpointConnectionError):
        return CliFailure(ExitCode.UNREACHABLE, f"cannot reach the AWS endpoint: {error}")
    if isinstance(error, ClientError):
        return _client_failure(error)
    if isinstance(error, BotoCoreError):
        return CliFailure(ExitCode.FAILED, f"AWS error: {type(error).__name__}")
    raise error


def _client_failure(error: ClientError) -> CliFailure:
    code = str(error.response.get("Error", {}).get("Code", ""))
    operation = error.operation_name
    if code in _ACCESS_DENIED:
        return CliFailure(
            ExitCode.ACCESS_DENIED,
            f"missing permission: {operation} was denied for your AWS identity ({code})",
        )
    if code in _BAD_CREDENTIALS:
        return CliFailure(ExitCode.NO_CREDENTIALS, f"AWS refused the credentials ({code})")
    return CliFailure(ExitCode.FAILED, f"{operation} failed: {code}")
