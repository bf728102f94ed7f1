"""Typed, validated reads of a function's environment variables, and the reads several
functions' settings share (one meaning, one bound each)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.domain.principals import owner_of

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Lambda's TracingConfig modes (https://docs.aws.amazon.com/lambda/latest/dg/API_TracingConfig.html).
TRACING_MODES = ("Active", "PassThrough")


class Env:
    """Typed, validated reads of environment variables; errors name the variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def text(self, name: str, default: str | None = None) -> str:
        value = self._environ.get(name, default)
        if value is None or not value.strip():
            raise ConfigurationError(f"{name} must be set")
        return value.strip()

    def optional_text(self, name: str) -> str:
        return self._environ.get(name, "").strip()

    def number(
        self, name: str, minimum: float, maximum: float, default: float | None = None
    ) -> float:
        raw = self._environ.get(name)
        if raw is None or not raw.strip():
            if default is None:
                raise ConfigurationError(f"{name} must be set")
            raw = str(default)
        try:
            value = float(raw)
        except ValueError as error:
            raise ConfigurationError(f"{name} must be a number, got {raw!r}") from error
        if not minimum <= value <= maximum:
            raise ConfigurationError(f"{name} must be between {minimum} and {maximum}")
        return value

    def integer(self, name: str, minimum: int, maximum: int, default: int | None = None) -> int:
        value = self.number(name, minimum, maximum, default)
        if value != int(value):
            raise ConfigurationError(f"{name} must be a whole number")
        return int(value)

    def flag(self, name: str) -> bool:
        raw = self._environ.get(name, "").strip().lower()
        if not raw:
            raise ConfigurationError(f"{name} must be set")
        if raw in {"true", "1", "yes"}:
            return True
        if raw in {"false", "0", "no"}:
            return False
        raise ConfigurationError(f"{name} must be true or false, got {raw!r}")

    def url(self, name: str, default: str | None = None, required: bool = True) -> str:
        value = self.text(name, default) if required else self.optional_text(name)
        if value:
            parts = urlsplit(value)
            if parts.scheme not in {"http", "https"} or not parts.netloc:
                raise ConfigurationError(f"{name} must be an http(s) URL")
        return value.rstrip("/")

    def provider_url(self, name: str) -> str:
        """https only: the API key travels in it. Plain http is for a loopback provider (local)."""
        value = self.url(name)
        parts = urlsplit(value)
        if parts.scheme != "https" and parts.hostname not in LOOPBACK_HOSTS:
            raise ConfigurationError(f"{name} must be https (http only for a loopback provider)")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ConfigurationError(f"{name} must have no query, fragment or credentials")
        return value


def admin_principal(env: Env) -> str:
    arn = env.optional_text("ADMIN_PRINCIPAL_ARN")
    return owner_of(arn) if arn else ""


def allow_loopback_pingbacks(env: Env) -> bool:
    """AllowLoopbackPingbacks, for local runs only: on AWS, loopback is the function's own Lambda
    Runtime API. A local run is one the template points at a local endpoint (AwsEndpointUrl ->
    AWS_ENDPOINT_URL, never set on AWS; the template's Rules refuse the flag without it)."""
    allowed = env.flag("ALLOW_LOOPBACK_PINGBACKS")
    if allowed and not env.optional_text("AWS_ENDPOINT_URL"):
        raise ConfigurationError(
            "ALLOW_LOOPBACK_PINGBACKS=true is for local runs only (AWS_ENDPOINT_URL set)"
        )
    return allowed


def traced(env: Env) -> bool:
    """The template's `Tracing` parameter (TRACING_MODE), the function's TracingConfig Mode:
    Active samples and records requests itself; PassThrough records none here, since an HTTP
    API never sends a sampled trace header."""
    mode = env.text("TRACING_MODE")
    if mode not in TRACING_MODES:
        raise ConfigurationError(f"TRACING_MODE must be one of {', '.join(TRACING_MODES)}")
    return mode == TRACING_MODES[0]


def retention_seconds(env: Env) -> float:
    """How long after submit (or registration) a task is still looked for (RetentionSeconds)."""
    return env.number("RETENTION_SECONDS", 10, 86400)


def report_window_seconds(env: Env) -> float:
    """How long after a task's earliest finish a report on it is sent (REPORT_WINDOW_SECONDS)."""
    return env.number("REPORT_WINDOW_SECONDS", 1, 86400)


def expected_solve_seconds(env: Env) -> float:
    """Until solve times are learned, when a result is likely ready."""
    return env.number("EXPECTED_SOLVE_SECONDS", 5, 600)


def backoff_max_seconds(env: Env) -> float:
    """The longest gap between two res.php checks of one task."""
    return env.number("POLL_BACKOFF_MAX_SECONDS", 5, 86400)


def sweep_interval_seconds(env: Env) -> float:
    """The poller's sweep grid: a GET's hint names its sweeps (logic/sweep_grid.py)."""
    return env.number("POLL_SWEEP_INTERVAL_SECONDS", 1, 60)
