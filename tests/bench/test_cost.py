"""The cost model's arithmetic: no measurement, only the formulas."""

from __future__ import annotations

import pytest

from bench.cost import (
    DAYS_PER_MONTH,
    GIB,
    MILLION,
    PRICES,
    SECONDS_PER_MONTH,
    Assumptions,
    BusyPoller,
    FixedInputs,
    Invocation,
    PathUsages,
    Usage,
    access_log_line_bytes,
    busy_poller_monthly,
    cost_by_service,
    fixed_monthly,
    lambda_usage,
    marginal_lambda_usage,
    per_million_tasks,
    sqs_requests_for,
    storage_usage,
    task_usage,
)


@pytest.mark.parametrize(("measured", "billed"), [(0.2, 1), (9.01, 10), (10.0, 10)])
def test_lambda_bills_duration_rounded_up_to_the_millisecond(measured: float, billed: int) -> None:
    assert Invocation(measured, 0).billed_ms == billed


def test_lambda_usage_counts_requests_gb_seconds_logs_and_sampled_traces() -> None:
    usage = lambda_usage(
        Invocation(9.2, 500), 2, 256, Assumptions(platform_log_bytes=300, trace_fixed_rate=0.05)
    )
    assert usage.lambda_requests == 2
    assert usage.lambda_gb_seconds == pytest.approx(2 * 0.25 * 0.010)
    assert usage.log_bytes == 2 * 800
    assert usage.traces == pytest.approx(0.1)


def test_a_task_in_a_scheduled_sweep_adds_only_its_share_of_the_extra_work() -> None:
    usage = marginal_lambda_usage(Invocation(210, 1000), Invocation(10, 200), 20, 1024)
    assert usage.lambda_requests == 0
    assert usage.lambda_gb_seconds == pytest.approx(0.010)
    assert usage.log_bytes == 40


def test_the_marginal_share_is_never_negative() -> None:
    usage = marginal_lambda_usage(Invocation(5, 100), Invocation(10, 200), 20, 1024)
    assert (usage.lambda_gb_seconds, usage.log_bytes) == (0, 0)


def test_usages_add_and_scale() -> None:
    total = Usage(api_requests=1, write_units=2) + Usage(api_requests=3)
    assert total == Usage(api_requests=4, write_units=2)
    assert total.times(0.5) == Usage(api_requests=2, write_units=1)


def test_prices_per_unit() -> None:
    costs = cost_by_service(
        Usage(
            api_requests=MILLION,
            lambda_requests=MILLION,
            lambda_gb_seconds=1,
            write_units=MILLION,
            read_units=MILLION,
            storage_gb_months=1,
            sqs_requests=MILLION,
            log_bytes=GIB,
            traces=MILLION,
            scheduler_invocations=MILLION,
            websocket_messages=MILLION,
            connection_minutes=MILLION,
            pipe_requests=MILLION,
            custom_events=MILLION,
        )
    )
    assert costs == pytest.approx(
        {
            "API Gateway HTTP API": 1.00,
            "Lambda requests": 0.20,
            "Lambda duration (arm64)": 0.0000133334,
            "DynamoDB writes": 0.625,
            "DynamoDB reads": 0.125,
            "DynamoDB storage + PITR": 0.45,
            "SQS": 0.40,
            "CloudWatch Logs ingestion": 0.50,
            "X-Ray traces": 5.00,
            "EventBridge Scheduler": 1.00,
            "API Gateway WebSocket": 1.25,
            "EventBridge Pipe + PutEvents": 1.40,
        }
    )


def test_per_million_tasks_scales_one_task() -> None:
    assert per_million_tasks(Usage(write_units=6))["DynamoDB writes"] == pytest.approx(3.75)


def test_a_task_mixes_the_paths_by_their_shares() -> None:
    paths = PathUsages(
        submit=Usage(write_units=1),
        get_task=Usage(write_units=10),
        storage=Usage(write_units=100),
        callback=Usage(write_units=1_000),
        duplicate=Usage(write_units=10_000),
        dead_letter=Usage(write_units=100_000),
        poll_recovery=Usage(write_units=1_000_000),
    )
    assumptions = Assumptions(duplicate_fraction=0.01, dead_letter_fraction=0.001)
    usage = task_usage(paths, lost_fraction=0.2, assumptions=assumptions)
    expected = 1 + 10 + 100 + 1_000 * 0.799 + 10_000 * 0.01 + 100_000 * 0.001 + 1_000_000 * 0.2
    assert usage.write_units == pytest.approx(expected)


def test_sqs_bills_every_started_64_kb() -> None:
    assert [sqs_requests_for(size) for size in (2344, 65536, 65537)] == [1, 1, 2]


def test_storage_lasts_until_the_ttl() -> None:
    assert storage_usage(GIB, DAYS_PER_MONTH).storage_gb_months == pytest.approx(1.0)
    assert storage_usage(GIB, 7).storage_gb_months == pytest.approx(7 / DAYS_PER_MONTH)


def test_fixed_monthly_costs() -> None:
    costs = fixed_monthly(
        FixedInputs(
            sweeps_per_month=43_800,
            empty_sweep=Invocation(10, 1000),
            queries_per_sweep=8,
            memory_mb=256,
            alarm_metrics=21,
            custom_metrics=30,
            dashboards=1,
            secrets=1,
            kms_keys=1,
        ),
        assumptions=Assumptions(sqs_event_source_pollers=5, sqs_long_poll_seconds=20),
    )
    assert costs["X-Ray reservoir (1 trace/s)"] == pytest.approx(SECONDS_PER_MONTH * 5 / MILLION)
    assert costs["CloudWatch alarms"] == pytest.approx(2.10)
    assert costs["CloudWatch custom metrics"] == pytest.approx(9.00)
    assert costs["CloudWatch dashboard"] == 3.00
    assert costs["EventBridge Scheduler"] == pytest.approx(0.0438)
    assert costs["DynamoDB reads"] == pytest.approx(43_800 * 8 * 0.5 * 0.125 / MILLION)
    assert costs["SQS"] == pytest.approx(5 * SECONDS_PER_MONTH / 20 * 0.40 / MILLION)
    assert costs["Lambda requests"] == pytest.approx(43_800 * 0.20 / MILLION)


def test_an_access_log_line_is_the_format_with_values_filled_in() -> None:
    line_format = '{"status":"$context.status","id":"$context.requestId","x":"$context.nope"}'
    size = access_log_line_bytes(line_format, {"status": "200", "requestId": "abc"})
    assert size == len('{"status":"200","id":"abc","x":""}') + 1


def test_a_busy_poller_costs_its_waiting_minute_and_its_extra_queries() -> None:
    busy = BusyPoller(
        invocations_per_month=43_800,
        run_seconds=55,
        sweep_interval_seconds=5,
        memory_mb=128,
        queries_per_sweep=8,
    )
    lambda_usd = 43_800 * 55 * 0.125 * PRICES.lambda_arm_gb_second
    reads_usd = 43_800 * 10 * 16 * 0.5 * PRICES.dynamodb_read_units_per_million / 1e6
    writes_usd = 43_800 * 2 * PRICES.dynamodb_write_units_per_million / 1e6
    assert busy_poller_monthly(busy) == pytest.approx(lambda_usd + reads_usd + writes_usd)
    assert 4.0 < busy_poller_monthly(busy) < 5.0
