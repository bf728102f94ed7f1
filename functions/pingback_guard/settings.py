"""One frozen settings object per function, read from the environment once at cold start.

Logic never reads ``os.environ``: handlers build these objects and pass the values on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from pingback_guard.domain.errors import ConfigurationError

MAX_IDS_PER_RES_REQUEST = 100


class _Env:
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

    def number(self, name: str, default: float, minimum: float, maximum: float) -> float:
        raw = self._environ.get(name)
        try:
            value = default if raw is None or not raw.strip() else float(raw)
        except ValueError as error:
            raise ConfigurationError(f"{name} must be a number, got {raw!r}") from error
        if not minimum <= value <= maximum:
            raise ConfigurationError(f"{name} must be between {minimum} and {maximum}")
        return value

    def integer(self, name: str, default: int, minimum: int, maximum: int) -> int:
        value = self.number(name, default, minimum, maximum)
        if value != int(value):
            raise ConfigurationError(f"{name} must be a whole number")
        return int(value)

    def flag(self, name: str, default: bool) -> bool:
        raw = self._environ.get(name, "").strip().lower()
        if not raw:
            return default
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


@dataclass(frozen=True)
class TableSettings:
    table_name: str
    due_index_name: str
    due_shards: int
    result_ttl_seconds: int

    @classmethod
    def from_env(cls, env: _Env) -> TableSettings:
        return cls(
            table_name=env.text("TASKS_TABLE_NAME"),
            due_index_name=env.text("DUE_INDEX_NAME", "DueIndex"),
            due_shards=env.integer("DUE_SHARDS", 8, 1, 256),
            result_ttl_seconds=env.integer("RESULT_TTL_DAYS", 7, 1, 365) * 86400,
        )


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str
    api_key_parameter: str
    api_key_cache_seconds: int
    batch_ids: bool
    batch_size: int
    connect_timeout_seconds: float
    read_timeout_seconds: float

    @classmethod
    def from_env(cls, env: _Env) -> ProviderSettings:
        return cls(
            base_url=env.url("PROVIDER_BASE_URL", "https://ocr.captchaai.com"),
            api_key_parameter=env.text("PROVIDER_API_KEY_PARAMETER"),
            api_key_cache_seconds=env.integer("SECRET_CACHE_SECONDS", 300, 0, 3600),
            batch_ids=env.flag("PROVIDER_BATCH_IDS", True),
            batch_size=env.integer(
                "PROVIDER_BATCH_SIZE", MAX_IDS_PER_RES_REQUEST, 1, MAX_IDS_PER_RES_REQUEST
            ),
            connect_timeout_seconds=env.number("PROVIDER_CONNECT_TIMEOUT_SECONDS", 3.05, 0.1, 30),
            read_timeout_seconds=env.number("PROVIDER_READ_TIMEOUT_SECONDS", 10, 0.1, 60),
        )


@dataclass(frozen=True)
class CallbackSettings:
    table: TableSettings
    dead_letter_queue_url: str
    callback_secret_id: str
    secret_cache_seconds: int
    verification_token: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CallbackSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            dead_letter_queue_url=env.url("DEAD_LETTER_QUEUE_URL"),
            callback_secret_id=env.text("CALLBACK_SECRET_ID"),
            secret_cache_seconds=env.integer("SECRET_CACHE_SECONDS", 300, 0, 3600),
            verification_token=env.optional_text("PINGBACK_VERIFICATION_TOKEN"),
        )


@dataclass(frozen=True)
class ReplaySettings:
    table: TableSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReplaySettings:
        return cls(table=TableSettings.from_env(_Env(environ)))


@dataclass(frozen=True)
class GetTaskSettings:
    table: TableSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GetTaskSettings:
        return cls(table=TableSettings.from_env(_Env(environ)))


@dataclass(frozen=True)
class SubmitSettings:
    table: TableSettings
    provider: ProviderSettings
    dead_letter_queue_url: str
    callback_secret_id: str
    secret_cache_seconds: int
    public_base_url: str
    callback_timeout_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SubmitSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            provider=ProviderSettings.from_env(env),
            dead_letter_queue_url=env.url("DEAD_LETTER_QUEUE_URL"),
            callback_secret_id=env.text("CALLBACK_SECRET_ID"),
            secret_cache_seconds=env.integer("SECRET_CACHE_SECONDS", 300, 0, 3600),
            public_base_url=env.url("PUBLIC_BASE_URL", required=False),
            callback_timeout_seconds=env.number("CALLBACK_TIMEOUT_SECONDS", 120, 1, 3600),
        )


@dataclass(frozen=True)
class PollerSettings:
    table: TableSettings
    provider: ProviderSettings
    retention_seconds: float
    backoff_base_seconds: float
    backoff_max_seconds: float
    max_requests_per_sweep: int
    deadline_margin_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PollerSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            provider=ProviderSettings.from_env(env),
            retention_seconds=env.number("RETENTION_SECONDS", 600, 10, 86400),
            backoff_base_seconds=env.number("POLL_BACKOFF_BASE_SECONDS", 30, 0.1, 3600),
            backoff_max_seconds=env.number("POLL_BACKOFF_MAX_SECONDS", 300, 0.1, 86400),
            max_requests_per_sweep=env.integer("POLLER_MAX_REQUESTS_PER_SWEEP", 50, 1, 10000),
            deadline_margin_seconds=env.number("POLLER_DEADLINE_MARGIN_SECONDS", 10, 0, 600),
        )


def clamped_poller_settings(settings: PollerSettings) -> tuple[PollerSettings, list[str]]:
    """Combinations of parameters CloudFormation cannot check, clamped instead of failing every
    sweep at cold start; the warnings say what was changed (the handler logs them)."""
    base, maximum = settings.backoff_base_seconds, settings.backoff_max_seconds
    if base <= maximum:
        return settings, []
    warning = (
        f"POLL_BACKOFF_BASE_SECONDS ({base:g}) is above POLL_BACKOFF_MAX_SECONDS ({maximum:g}):"
        " the base is clamped to the maximum"
    )
    return replace(settings, backoff_base_seconds=maximum), [warning]
