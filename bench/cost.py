"""Cost model: USD per million tasks at us-east-1 list prices, and fixed monthly costs.

Pure arithmetic. The inputs (request counts, durations, log bytes, item sizes) are measured by
the other benchmark sections; the assumptions that are not measured are named in `Assumptions`.
Free tiers are ignored: these are the prices of an account that already uses them up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from infra.project_template import function_traced, project_template

MILLION = 1_000_000
GIB = 1024**3
HOURS_PER_MONTH = 730
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
SQS_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Prices:
    """us-east-1 list prices."""

    api_gateway_http_per_million: float = 1.00
    lambda_requests_per_million: float = 0.20
    lambda_arm_gb_second: float = 0.0000133334
    dynamodb_write_units_per_million: float = 0.625
    dynamodb_read_units_per_million: float = 0.125
    dynamodb_storage_gb_month: float = 0.25
    dynamodb_pitr_gb_month: float = 0.20
    sqs_requests_per_million: float = 0.40
    logs_ingestion_per_gb: float = 0.50
    xray_traces_per_million: float = 5.00
    scheduler_invocations_per_million: float = 1.00
    alarm_metric_month: float = 0.10
    custom_metric_month: float = 0.30
    dashboard_month: float = 3.00
    secret_month: float = 0.40
    kms_key_month: float = 1.00
    websocket_messages_per_million: float = 1.00
    """API Gateway WebSocket API: messages sent and received (each 32 KB started)."""
    websocket_connection_minutes_per_million: float = 0.25
    # EventBridge (https://aws.amazon.com/eventbridge/pricing/): a pipe's requests after its
    # filter, each 64 KB chunk one; custom events put on a bus (PutEvents), each 64 KB one.
    pipe_requests_per_million: float = 0.40
    custom_events_per_million: float = 1.00


@dataclass(frozen=True)
class Assumptions:
    """What the model assumes where the benchmarks cannot measure it."""

    platform_log_bytes: int = 300
    """Lambda's START, END and REPORT lines of each invocation."""
    trace_fixed_rate: float = 0.05
    """X-Ray default rule: 5% of requests beyond the reservoir."""
    trace_reservoir_per_second: float = 1.0
    """X-Ray default rule: one trace per second, shared by the account's services."""
    duplicate_fraction: float = 0.01
    dead_letter_fraction: float = 0.001
    """Callbacks the table refused (outage) that went through the DLQ and the replay function."""
    sqs_event_source_requests_per_message: int = 2
    """The event source mapping's ReceiveMessage and DeleteMessage for each message."""
    sqs_event_source_pollers: int = 5
    sqs_long_poll_seconds: int = 20


PRICES = Prices()


def assumptions_at_defaults(template: Mapping[str, Any]) -> Assumptions:
    """X-Ray samples (and bills) only when a function is traced at the template's defaults (the
    `Tracing` parameter: PassThrough records nothing for an HTTP API's requests)."""
    functions = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::Serverless::Function"
    ]
    if any(function_traced(template, logical_id) for logical_id in functions):
        return Assumptions()
    return Assumptions(trace_fixed_rate=0.0, trace_reservoir_per_second=0.0)


ASSUMPTIONS = assumptions_at_defaults(project_template())


@dataclass(frozen=True)
class Usage:
    """Billable units: per task, per path or per month."""

    api_requests: float = 0.0
    lambda_requests: float = 0.0
    lambda_gb_seconds: float = 0.0
    write_units: float = 0.0
    read_units: float = 0.0
    storage_gb_months: float = 0.0
    sqs_requests: float = 0.0
    log_bytes: float = 0.0
    traces: float = 0.0
    scheduler_invocations: float = 0.0
    websocket_messages: float = 0.0
    connection_minutes: float = 0.0
    pipe_requests: float = 0.0
    custom_events: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def times(self, factor: float) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) * factor for f in fields(self)})


@dataclass(frozen=True)
class Invocation:
    """One measured handler invocation."""

    duration_ms: float
    log_bytes: int

    @property
    def billed_ms(self) -> int:
        """Lambda bills duration rounded up to the millisecond."""
        return max(1, math.ceil(self.duration_ms))


@dataclass(frozen=True)
class PathUsages:
    """Usage of one task on each path it can take."""

    submit: Usage
    get_task: Usage
    storage: Usage
    callback: Usage
    duplicate: Usage
    dead_letter: Usage
    poll_recovery: Usage


def lambda_usage(
    invocation: Invocation, count: float, memory_mb: int, assumptions: Assumptions = ASSUMPTIONS
) -> Usage:
    return Usage(
        lambda_requests=count,
        lambda_gb_seconds=count * memory_mb / 1024 * invocation.billed_ms / 1000,
        log_bytes=count * (invocation.log_bytes + assumptions.platform_log_bytes),
        traces=count * assumptions.trace_fixed_rate,
    )


def marginal_lambda_usage(
    loaded: Invocation, empty: Invocation, tasks: float, memory_mb: int
) -> Usage:
    """What each of `tasks` adds to an invocation that runs anyway (the scheduled poller)."""
    extra_ms = max(0.0, loaded.duration_ms - empty.duration_ms) / tasks
    extra_log = max(0, loaded.log_bytes - empty.log_bytes) / tasks
    return Usage(lambda_gb_seconds=memory_mb / 1024 * extra_ms / 1000, log_bytes=extra_log)


def sqs_requests_for(message_bytes: int) -> int:
    """SQS bills every started 64 KB of a message as one request."""
    return max(1, math.ceil(message_bytes / SQS_CHUNK_BYTES))


def storage_usage(stored_item_bytes: int, ttl_days: float) -> Usage:
    """A finished task stays until its TTL; deletion lag is not counted."""
    return Usage(storage_gb_months=stored_item_bytes / GIB * ttl_days / DAYS_PER_MONTH)


RESULT_EVENT = Usage(pipe_requests=1, custom_events=1)
"""A finished task's stream record through the pipe, put on the bus as one result event (under
64 KB: one request and one event)."""


def task_usage(paths: PathUsages, lost_fraction: float, assumptions: Assumptions) -> Usage:
    """One task: submit, one GET, storage, its result event, and its result by callback, DLQ or
    poll."""
    dead_letter = assumptions.dead_letter_fraction
    delivered = 1.0 - lost_fraction - dead_letter
    return (
        paths.submit
        + paths.get_task
        + paths.storage
        + RESULT_EVENT
        + paths.callback.times(delivered)
        + paths.dead_letter.times(dead_letter)
        + paths.poll_recovery.times(lost_fraction)
        + paths.duplicate.times(assumptions.duplicate_fraction)
    )


def cost_by_service(usage: Usage, prices: Prices = PRICES) -> dict[str, float]:
    return {
        "API Gateway HTTP API": usage.api_requests * prices.api_gateway_http_per_million / MILLION,
        "Lambda requests": usage.lambda_requests * prices.lambda_requests_per_million / MILLION,
        "Lambda duration (arm64)": usage.lambda_gb_seconds * prices.lambda_arm_gb_second,
        "DynamoDB writes": usage.write_units * prices.dynamodb_write_units_per_million / MILLION,
        "DynamoDB reads": usage.read_units * prices.dynamodb_read_units_per_million / MILLION,
        "DynamoDB storage + PITR": usage.storage_gb_months
        * (prices.dynamodb_storage_gb_month + prices.dynamodb_pitr_gb_month),
        "SQS": usage.sqs_requests * prices.sqs_requests_per_million / MILLION,
        "CloudWatch Logs ingestion": usage.log_bytes / GIB * prices.logs_ingestion_per_gb,
        "X-Ray traces": usage.traces * prices.xray_traces_per_million / MILLION,
        "EventBridge Scheduler": usage.scheduler_invocations
        * prices.scheduler_invocations_per_million
        / MILLION,
        "API Gateway WebSocket": (
            usage.websocket_messages * prices.websocket_messages_per_million
            + usage.connection_minutes * prices.websocket_connection_minutes_per_million
        )
        / MILLION,
        "EventBridge Pipe + PutEvents": (
            usage.pipe_requests * prices.pipe_requests_per_million
            + usage.custom_events * prices.custom_events_per_million
        )
        / MILLION,
    }


def per_million_tasks(per_task: Usage, prices: Prices = PRICES) -> dict[str, float]:
    return cost_by_service(per_task.times(MILLION), prices)


@dataclass(frozen=True)
class FixedInputs:
    """What runs every month whatever the number of tasks."""

    sweeps_per_month: float
    empty_sweep: Invocation
    queries_per_sweep: float
    memory_mb: int
    alarm_metrics: int
    custom_metrics: int
    dashboards: int
    secrets: int
    kms_keys: int


def fixed_monthly(
    inputs: FixedInputs, prices: Prices = PRICES, assumptions: Assumptions = ASSUMPTIONS
) -> dict[str, float]:
    sweeps = inputs.sweeps_per_month
    # An empty Query still costs the minimum: half a read unit (eventually consistent).
    schedule = lambda_usage(inputs.empty_sweep, sweeps, inputs.memory_mb, assumptions) + Usage(
        read_units=sweeps * inputs.queries_per_sweep * 0.5,
        scheduler_invocations=sweeps,
        sqs_requests=assumptions.sqs_event_source_pollers
        * SECONDS_PER_MONTH
        / assumptions.sqs_long_poll_seconds,
    )
    by_service = {name: cost for name, cost in cost_by_service(schedule, prices).items() if cost}
    reservoir_traces = assumptions.trace_reservoir_per_second * SECONDS_PER_MONTH
    reservoir = reservoir_traces * prices.xray_traces_per_million / MILLION
    return {
        **by_service,
        **({"X-Ray reservoir (1 trace/s)": reservoir} if reservoir else {}),
        "CloudWatch alarms": inputs.alarm_metrics * prices.alarm_metric_month,
        "CloudWatch custom metrics": inputs.custom_metrics * prices.custom_metric_month,
        "CloudWatch dashboard": inputs.dashboards * prices.dashboard_month,
        "Secrets Manager secret": inputs.secrets * prices.secret_month,
        "KMS key (alarm topic)": inputs.kms_keys * prices.kms_key_month,
    }


# Typical values of the $context variables an HTTP API access log line carries.
SAMPLE_ACCESS_LOG_CONTEXT = {
    "requestId": "JkHgLh1MIAMEbMw=",
    "identity.sourceIp": "203.0.113.10",
    "requestTime": "29/Nov/2026:21:44:20 +0000",
    "routeKey": "GET /callback/{secret}",
    "status": "200",
    "responseLength": "2",
    "responseLatency": "14",
    "integrationLatency": "12",
    "integrationStatus": "200",
}


def access_log_line_bytes(log_format: str, context: dict[str, str] | None = None) -> int:
    """Bytes of one access log line: the template's format with typical values filled in."""
    values = SAMPLE_ACCESS_LOG_CONTEXT if context is None else context
    line = re.sub(r"\$context\.([A-Za-z.]+)", lambda m: values.get(m.group(1), ""), log_format)
    return len(line.encode("utf-8")) + 1


@dataclass(frozen=True)
class BusyPoller:
    """The poller of a stack that always has a task pending: each scheduled invocation stays
    ``run_seconds`` and sweeps every ``sweep_interval_seconds`` (issue 10's cadence)."""

    invocations_per_month: float
    run_seconds: float
    sweep_interval_seconds: float
    memory_mb: int
    queries_per_sweep: float
    lease_writes_per_invocation: int = 2


def busy_poller_monthly(poller: BusyPoller, prices: Prices = PRICES) -> float:
    """What sweeping all minute long adds to one short sweep a minute, USD a month."""
    extra_sweeps = max(0.0, poller.run_seconds / poller.sweep_interval_seconds - 1)
    # Each extra sweep also asks the index whether anything comes due before the run ends.
    queries = poller.invocations_per_month * extra_sweeps * poller.queries_per_sweep * 2
    usage = Usage(
        lambda_gb_seconds=poller.invocations_per_month
        * poller.run_seconds
        * poller.memory_mb
        / 1024,
        read_units=queries * 0.5,
        write_units=poller.invocations_per_month * poller.lease_writes_per_invocation,
    )
    return sum(cost_by_service(usage, prices).values())
