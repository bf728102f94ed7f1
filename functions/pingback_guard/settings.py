"""One frozen settings object per function, read from the environment once at cold start.

Logic never reads ``os.environ``: handlers build these objects and pass the values on. A value
the template sets from one of its Parameters has no default here (the Parameter's Default is the
one place it is stated): a missing variable fails the cold start with its name. Defaults here are
for what the template leaves to the code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pingback_guard.domain.errors import ConfigurationError
from pingback_guard.domain.principals import owner_of
from pingback_guard.domain.request_budgets import RequestLimits
from pingback_guard.domain.task import TokenLifetimes

if TYPE_CHECKING:
    from pingback_guard.logic.poll_schedule import PollPolicy
    from pingback_guard.logic.poller_fan_out import FanOutPolicy

MAX_IDS_PER_RES_REQUEST = 100
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# A revoked callback secret stops working within this long (per container cache).
DEFAULT_CALLBACK_SECRET_CACHE_SECONDS = 60


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


def admin_principal(env: _Env) -> str:
    arn = env.optional_text("ADMIN_PRINCIPAL_ARN")
    return owner_of(arn) if arn else ""


def allow_loopback_pingbacks(env: _Env) -> bool:
    """AllowLoopbackPingbacks, for local runs only: on AWS, loopback is the function's own Lambda
    Runtime API. A local run is one the template points at a local endpoint (AwsEndpointUrl ->
    AWS_ENDPOINT_URL, never set on AWS; the template's Rules refuse the flag without it)."""
    allowed = env.flag("ALLOW_LOOPBACK_PINGBACKS")
    if allowed and not env.optional_text("AWS_ENDPOINT_URL"):
        raise ConfigurationError(
            "ALLOW_LOOPBACK_PINGBACKS=true is for local runs only (AWS_ENDPOINT_URL set)"
        )
    return allowed


def retention_seconds(env: _Env) -> float:
    """How long after submit (or registration) a task is still looked for (RetentionSeconds)."""
    return env.number("RETENTION_SECONDS", 10, 86400)


@dataclass(frozen=True)
class CallbackSecretSettings:
    """The callback secret, and how long the capabilities it signs count.

    A capability from POST /pingback-urls must be registered within the retention window of its
    issue; the provider may then deliver up to a retention window after that: a pingback URL is
    refused once it is two retention windows old.
    """

    secret_id: str
    cache_seconds: int
    registration_window_seconds: float

    @property
    def capability_max_age_seconds(self) -> float:
        return 2 * self.registration_window_seconds

    @classmethod
    def from_env(cls, env: _Env) -> CallbackSecretSettings:
        return cls(
            secret_id=env.text("CALLBACK_SECRET_ID"),
            # Short on purpose: the cache age bounds how long a revoked callback secret still works.
            cache_seconds=env.integer(
                "CALLBACK_SECRET_CACHE_SECONDS", 0, 300, DEFAULT_CALLBACK_SECRET_CACHE_SECONDS
            ),
            registration_window_seconds=retention_seconds(env),
        )


@dataclass(frozen=True)
class TableSettings:
    table_name: str
    due_index_name: str
    due_shards: int
    result_ttl_seconds: int
    token_lifetimes: TokenLifetimes
    # A pingback for an id no task registered yet is kept one retention window.
    provisional_ttl_seconds: int

    @classmethod
    def from_env(cls, env: _Env) -> TableSettings:
        return cls(
            table_name=env.text("TASKS_TABLE_NAME"),
            due_index_name=env.text("DUE_INDEX_NAME"),
            due_shards=env.integer("DUE_SHARDS", 1, 256),
            result_ttl_seconds=env.integer("RESULT_TTL_DAYS", 1, 365) * 86400,
            provisional_ttl_seconds=int(retention_seconds(env)),
            token_lifetimes=TokenLifetimes(
                recaptcha=env.number("RECAPTCHA_TOKEN_LIFETIME_SECONDS", 1, 3600),
                hcaptcha=env.number("HCAPTCHA_TOKEN_LIFETIME_SECONDS", 1, 3600),
                turnstile=env.number("TURNSTILE_TOKEN_LIFETIME_SECONDS", 1, 3600),
                geetest=env.number("GEETEST_TOKEN_LIFETIME_SECONDS", 1, 3600),
                cloudflare_challenge=env.number("CLOUDFLARE_CLEARANCE_LIFETIME_SECONDS", 1, 86400),
            ),
        )


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str
    api_key_parameter: str
    api_key_cache_seconds: int
    connect_timeout_seconds: float
    call_deadline_seconds: float

    @property
    def call_bound_seconds(self) -> float:
        """The longest one res.php request may take: its connect, then its whole answer within
        the call deadline (CaptchaAiClient never retries a res.php request)."""
        return self.connect_timeout_seconds + self.call_deadline_seconds

    @classmethod
    def from_env(cls, env: _Env) -> ProviderSettings:
        return cls(
            base_url=env.provider_url("PROVIDER_BASE_URL"),
            api_key_parameter=env.text("PROVIDER_API_KEY_PARAMETER"),
            api_key_cache_seconds=env.integer("SECRET_CACHE_SECONDS", 0, 3600, 300),
            connect_timeout_seconds=env.number("PROVIDER_CONNECT_TIMEOUT_SECONDS", 0.1, 30, 3.05),
            call_deadline_seconds=env.number("PROVIDER_CALL_DEADLINE_SECONDS", 0.2, 60, 10),
        )


# botocore's standard retry mode waits up to min(2 ** (retry - 1), 20) s before a retry
# (https://docs.aws.amazon.com/boto3/latest/guide/retries.html), raised by an
# x-amz-retry-after header by at most 5 s more (botocore.retries.standard.ExponentialBackoff).
MAX_RETRY_BACKOFF_SECONDS = 20
RETRY_AFTER_EXTRA_SECONDS = 5


@dataclass(frozen=True)
class StoreCallSettings:
    """How long one DynamoDB request of a function may take, its retries included: the
    botocore Config's connect and read timeouts and total attempts (aws_clients.bounded_config)."""

    connect_timeout_seconds: float
    read_timeout_seconds: float
    max_attempts: int

    @property
    def bound_seconds(self) -> float:
        """Every attempt at its timeouts, and the longest wait before each retry."""
        waits = sum(
            min(2.0 ** (retry - 1), MAX_RETRY_BACKOFF_SECONDS) + RETRY_AFTER_EXTRA_SECONDS
            for retry in range(1, self.max_attempts)
        )
        return (
            self.max_attempts * (self.connect_timeout_seconds + self.read_timeout_seconds) + waits
        )

    @classmethod
    def poller_from_env(cls, env: _Env) -> StoreCallSettings:
        """The poller's: one attempt by default, since its next sweep is its retry and a retry's
        wait would come off the time its deadline check must leave for every call."""
        return cls(
            connect_timeout_seconds=env.number("POLLER_STORE_CONNECT_TIMEOUT_SECONDS", 0.1, 10, 1),
            read_timeout_seconds=env.number("POLLER_STORE_READ_TIMEOUT_SECONDS", 0.1, 30, 3),
            max_attempts=env.integer("POLLER_STORE_MAX_ATTEMPTS", 1, 5, 1),
        )


@dataclass(frozen=True)
class CallbackSettings:
    table: TableSettings
    dead_letter_queue_url: str
    callback_secret: CallbackSecretSettings
    verification_token: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CallbackSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            dead_letter_queue_url=env.url("DEAD_LETTER_QUEUE_URL"),
            callback_secret=CallbackSecretSettings.from_env(env),
            verification_token=env.optional_text("PINGBACK_VERIFICATION_TOKEN"),
        )


@dataclass(frozen=True)
class ReplaySettings:
    table: TableSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReplaySettings:
        return cls(table=TableSettings.from_env(_Env(environ)))


@dataclass(frozen=True)
class WorkerTaskSettings:
    """What a worker's routes on its own tasks share (the admin principal sees every task), with
    the provider at hand for the read-through and the report."""

    table: TableSettings
    provider: ProviderSettings
    admin_principal_arn: str

    @staticmethod
    def common(env: _Env) -> dict[str, Any]:
        return {
            "table": TableSettings.from_env(env),
            "provider": ProviderSettings.from_env(env),
            # Compared as callers are: a role ARN without its path (domain/principals.py).
            "admin_principal_arn": admin_principal(env),
        }


@dataclass(frozen=True)
class GetTaskSettings(WorkerTaskSettings):
    read_through_interval_seconds: float
    read_through_max_gap_seconds: float
    expected_solve_seconds: float
    poll_sweep_interval_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GetTaskSettings:
        env = _Env(environ)
        return cls(
            **cls.common(env),
            read_through_interval_seconds=env.number("READ_THROUGH_INTERVAL_SECONDS", 0.1, 3600),
            read_through_max_gap_seconds=backoff_max_seconds(env),
            expected_solve_seconds=expected_solve_seconds(env),
            poll_sweep_interval_seconds=sweep_interval_seconds(env),
        )


@dataclass(frozen=True)
class ReportSettings(WorkerTaskSettings):
    report_window_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReportSettings:
        env = _Env(environ)
        return cls(
            **cls.common(env),
            report_window_seconds=env.number("REPORT_WINDOW_SECONDS", 1, 86400),
        )


@dataclass(frozen=True)
class PingbackIssueSettings:
    """What a function that hands out pingback URLs and records PENDING tasks needs."""

    callback_secret: CallbackSecretSettings
    public_base_url: str
    callback_timeout_seconds: float
    expected_solve_seconds: float

    @classmethod
    def from_env(cls, env: _Env) -> PingbackIssueSettings:
        return cls(
            callback_secret=CallbackSecretSettings.from_env(env),
            public_base_url=env.url("PUBLIC_BASE_URL", required=False),
            callback_timeout_seconds=env.number("CALLBACK_TIMEOUT_SECONDS", 1, 3600),
            expected_solve_seconds=expected_solve_seconds(env),
        )


@dataclass(frozen=True)
class RegisterSettings:
    """POST /pingback-urls and PUT /tasks/{task_id}: tasks submitted outside the stack; and the
    smoke check's synthetic tasks (/smoke-tasks, the admin principal's only)."""

    table: TableSettings
    pingbacks: PingbackIssueSettings
    # res.php: a registered id must be one the provider has handed out.
    provider: ProviderSettings
    admin_principal_arn: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RegisterSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            pingbacks=PingbackIssueSettings.from_env(env),
            provider=ProviderSettings.from_env(env),
            admin_principal_arn=admin_principal(env),
        )


@dataclass(frozen=True)
class SubmitSettings:
    table: TableSettings
    provider: ProviderSettings
    dead_letter_queue_url: str
    pingbacks: PingbackIssueSettings
    poller_function_name: str
    wake_poller: bool
    """Start the poller when a task is recorded while none sweeps on (PollerWakeOnSubmit)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SubmitSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            provider=ProviderSettings.from_env(env),
            dead_letter_queue_url=env.url("DEAD_LETTER_QUEUE_URL"),
            pingbacks=PingbackIssueSettings.from_env(env),
            poller_function_name=env.text("POLLER_FUNCTION_NAME"),
            wake_poller=env.flag("POLLER_WAKE_ON_SUBMIT"),
        )


def expected_solve_seconds(env: _Env) -> float:
    """Until solve times are learned, when a result is likely ready."""
    return env.number("EXPECTED_SOLVE_SECONDS", 5, 600)


def backoff_max_seconds(env: _Env) -> float:
    """The longest gap between two res.php checks of one task."""
    return env.number("POLL_BACKOFF_MAX_SECONDS", 5, 86400)


def sweep_interval_seconds(env: _Env) -> float:
    """The poller's sweep grid: a GET's hint names its sweeps (logic/sweep_grid.py)."""
    return env.number("POLL_SWEEP_INTERVAL_SECONDS", 1, 60)


@dataclass(frozen=True)
class PollerSettings:
    table: TableSettings
    provider: ProviderSettings
    store_calls: StoreCallSettings
    policy: PollPolicy
    expected_solve_seconds: float
    fan_out: FanOutPolicy
    function_name: str
    """This function's own name (Lambda's AWS_LAMBDA_FUNCTION_NAME): helpers are invocations
    of it."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PollerSettings:
        # Imported here so that the other handlers' cold start does not load the poll schedule.
        from pingback_guard.logic.poll_schedule import PollPolicy
        from pingback_guard.logic.poller_fan_out import FanOutPolicy

        env = _Env(environ)
        provider = ProviderSettings.from_env(env)
        store_calls = StoreCallSettings.poller_from_env(env)
        return cls(
            table=TableSettings.from_env(env),
            provider=provider,
            store_calls=store_calls,
            policy=PollPolicy(
                retention_seconds=retention_seconds(env),
                # 2captcha: no more often than every 5 s per task.
                backoff_base_seconds=env.number("POLL_BACKOFF_BASE_SECONDS", 5, 3600),
                backoff_max_seconds=backoff_max_seconds(env),
                max_requests_per_sweep=env.integer("POLLER_MAX_REQUESTS_PER_SWEEP", 1, 10000),
                ids_per_request=_ids_per_request(env),
                deadline_margin_seconds=env.number("POLLER_DEADLINE_MARGIN_SECONDS", 0, 600, 10),
                sweep_interval_seconds=sweep_interval_seconds(env),
                run_seconds=env.number("POLLER_RUN_SECONDS", 0, 900, 55),
                batch_probe_seconds=env.number("POLL_BATCH_PROBE_SECONDS", 0, 86400, 300),
                request_workers=env.integer("POLLER_REQUEST_WORKERS", 1, 128),
                store_call_seconds=store_calls.bound_seconds,
                provider_call_seconds=provider.call_bound_seconds,
            ),
            expected_solve_seconds=expected_solve_seconds(env),
            # Lambda sets both for every function:
            # https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime
            fan_out=FanOutPolicy.for_memory(
                env.integer("POLLER_HELPERS", 0, 63, 0),
                env.integer("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", 128, 10240, 128),
            ),
            function_name=env.optional_text("AWS_LAMBDA_FUNCTION_NAME"),
        )


def _ids_per_request(env: _Env) -> int:
    """res.php ids per request: a batch (``ids=``) unless batching is off."""
    if not env.flag("PROVIDER_BATCH_IDS"):
        return 1
    return env.integer("PROVIDER_BATCH_SIZE", 1, MAX_IDS_PER_RES_REQUEST, MAX_IDS_PER_RES_REQUEST)


def clamped_poller_settings(settings: PollerSettings) -> tuple[PollerSettings, list[str]]:
    """Combinations of parameters CloudFormation cannot check, clamped instead of failing every
    sweep at cold start; the warnings say what was changed (the handler logs them)."""
    policy, warnings = settings.policy, []
    base, maximum = policy.backoff_base_seconds, policy.backoff_max_seconds
    if base > maximum:
        warnings.append(
            f"POLL_BACKOFF_BASE_SECONDS ({base:g}) is above POLL_BACKOFF_MAX_SECONDS ({maximum:g}):"
            " the base is clamped to the maximum"
        )
        policy = replace(policy, backoff_base_seconds=maximum)
    # The margin holds the last held checks' writes and the lease's release: one slowest store
    # call each at least.
    least_margin = 2 * policy.store_call_seconds
    if policy.deadline_margin_seconds < least_margin:
        warnings.append(
            f"POLLER_DEADLINE_MARGIN_SECONDS ({policy.deadline_margin_seconds:g}) is below twice"
            f" the slowest store call ({policy.store_call_seconds:g} s): raised to {least_margin:g}"
        )
        policy = replace(policy, deadline_margin_seconds=least_margin)
    return replace(settings, policy=policy), warnings


# API Gateway closes a WebSocket connection after 2 hours at most: a record outliving that is stale.
DEFAULT_PUSH_CONNECTION_TTL_SECONDS = 7200
DEFAULT_PUSH_MAX_CONNECTIONS_PER_OWNER = 100


@dataclass(frozen=True)
class PushSettings:
    table: TableSettings
    management_endpoint: str
    """The WebSocket API's @connections endpoint: https://{api}.execute-api.{region}.../{stage}."""
    connection_ttl_seconds: int
    max_connections_per_owner: int

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PushSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            management_endpoint=env.provider_url("PUSH_MANAGEMENT_ENDPOINT"),
            connection_ttl_seconds=env.integer(
                "PUSH_CONNECTION_TTL_SECONDS", 60, 86400, DEFAULT_PUSH_CONNECTION_TTL_SECONDS
            ),
            max_connections_per_owner=env.integer(
                "PUSH_MAX_CONNECTIONS_PER_OWNER", 1, 1000, DEFAULT_PUSH_MAX_CONNECTIONS_PER_OWNER
            ),
        )


@dataclass(frozen=True)
class KeyBudgetSettings:
    """One endpoint's request budget per worker key, counted in its own table."""

    table_name: str
    limits: RequestLimits

    @classmethod
    def from_env(cls, env: _Env, endpoint: str) -> KeyBudgetSettings:
        """``endpoint``: IN_PHP or RES_PHP, the prefix of its two variables."""
        return cls(
            table_name=env.text("REQUEST_BUDGETS_TABLE_NAME"),
            limits=RequestLimits(
                per_second=env.integer(f"{endpoint}_BUDGET_PER_SECOND", 1, 10000),
                per_minute=env.integer(f"{endpoint}_BUDGET_PER_MINUTE", 1, 10000),
            ),
        )


@dataclass(frozen=True)
class CompatSubmitSettings:
    """in.php on the stack's API: a submit like POST /tasks, with per-worker keys."""

    submit: SubmitSettings
    worker_keys_table: str
    allow_loopback_pingbacks: bool
    budget: KeyBudgetSettings

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CompatSubmitSettings:
        env = _Env(environ)
        return cls(
            submit=SubmitSettings.from_env(environ),
            worker_keys_table=env.text("WORKER_KEYS_TABLE_NAME"),
            allow_loopback_pingbacks=allow_loopback_pingbacks(env),
            budget=KeyBudgetSettings.from_env(env, "IN_PHP"),
        )


@dataclass(frozen=True)
class CompatResultSettings:
    """res.php on the stack's API: GET /tasks/{id}'s read, the report and the balance."""

    get_task: GetTaskSettings
    report_window_seconds: float
    worker_keys_table: str
    budget: KeyBudgetSettings
    # The provider is asked for the balance at most this often, for the whole stack.
    balance_cache_seconds: float

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CompatResultSettings:
        env = _Env(environ)
        return cls(
            get_task=GetTaskSettings.from_env(environ),
            report_window_seconds=ReportSettings.from_env(environ).report_window_seconds,
            worker_keys_table=env.text("WORKER_KEYS_TABLE_NAME"),
            budget=KeyBudgetSettings.from_env(env, "RES_PHP"),
            balance_cache_seconds=env.number("BALANCE_CACHE_SECONDS", 10, 3600),
        )


@dataclass(frozen=True)
class ForwardSettings:
    """The result forward reads the task (its result and the worker's own pingback URL)."""

    table: TableSettings
    allow_loopback_pingbacks: bool

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ForwardSettings:
        env = _Env(environ)
        return cls(
            table=TableSettings.from_env(env),
            allow_loopback_pingbacks=allow_loopback_pingbacks(env),
        )
