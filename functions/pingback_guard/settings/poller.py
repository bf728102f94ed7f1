"""PollerFunction's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pingback_guard.logic.poll_schedule import PollPolicy
from pingback_guard.logic.poller_fan_out import FanOutPolicy
from pingback_guard.settings.env import (
    Env,
    backoff_max_seconds,
    expected_solve_seconds,
    retention_seconds,
    sweep_interval_seconds,
)
from pingback_guard.settings.provider import ProviderSettings
from pingback_guard.settings.table import TableSettings

MAX_IDS_PER_RES_REQUEST = 100

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
    def poller_from_env(cls, env: Env) -> StoreCallSettings:
        """The poller's: one attempt by default, since its next sweep is its retry and a retry's
        wait would come off the time its deadline check must leave for every call."""
        return cls(
            connect_timeout_seconds=env.number("POLLER_STORE_CONNECT_TIMEOUT_SECONDS", 0.1, 10, 1),
            read_timeout_seconds=env.number("POLLER_STORE_READ_TIMEOUT_SECONDS", 0.1, 30, 3),
            max_attempts=env.integer("POLLER_STORE_MAX_ATTEMPTS", 1, 5, 1),
        )


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
        env = Env(environ)
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


def _ids_per_request(env: Env) -> int:
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
