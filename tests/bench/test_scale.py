"""The scale section's verdicts say MISSED when a row misses, and name what gave out first:
rows made up here, one limit passed at a time."""

from __future__ import annotations

import dataclasses

import pytest

from bench.scale import (
    LAMBDA_ACCOUNT_CONCURRENCY,
    SCENARIOS,
    TARGET_RATE,
    Row,
    Scenario,
    alone,
    default_sizing,
    run_row,
    scale_outcome,
)
from bench.scale_model import PARTITION_WRITE_UNITS, PartitionLoad
from pingback_guard.logic.poller_fan_out import FAN_OUT_LOAD_SHARE


def row(**changes: object) -> Row:
    held = Row(
        rate=TARGET_RATE,
        scenario="b",
        sizing=default_sizing(),
        sample=5,
        tasks=72_000,
        lost=0,
        age_by_kind={"recaptcha": (3.0, 8.0)},
        token_age_p95=8.0,
        res_requests_per_second=9.0,
        res_limit_share=0.5,
        table_requests_per_task=2.5,
        hottest=PartitionLoad("due-shard-3", 900.0, PARTITION_WRITE_UNITS),
        concurrency={"submit": 65.0, "callback": 0.0, "poller": 1.0},
        usd_per_million=5.0,
        route_shares={"ApiThrottlingRateLimit": 0.5, "CallbackThrottlingRateLimit": 0.0},
        poller_cpu_busy=0.5,
        pollers=8,
    )
    return dataclasses.replace(held, **changes)  # type: ignore[arg-type]


def headline_verdict(judged: Row) -> str:
    (headline,) = scale_outcome([judged]).headlines
    return headline.verdict


def test_a_row_inside_every_limit_with_fresh_tokens_is_met() -> None:
    assert row().gives_out == [] and headline_verdict(row()) == "met"


@pytest.mark.parametrize(
    ("changes", "gave_out"),
    [
        ({"lost": 1}, "the poller fell behind"),
        ({"res_limit_share": 1.01}, "res.php requests"),
        ({"hottest": PartitionLoad("due-shard-3", 1001.0, PARTITION_WRITE_UNITS)}, "due-shard-3"),
        (
            {"concurrency": {"submit": LAMBDA_ACCOUNT_CONCURRENCY + 1.0, "callback": 0.0}},
            "Lambda concurrency",
        ),
        (
            {"route_shares": {"ApiThrottlingRateLimit": 2.0, "CallbackThrottlingRateLimit": 0.5}},
            "ApiThrottlingRateLimit",
        ),
        ({"poller_cpu_busy": 0.95}, "the poller's CPU"),
    ],
)
def test_a_row_past_a_limit_is_missed_and_says_what_gave_out(
    changes: dict[str, object], gave_out: str
) -> None:
    missed = row(**changes)
    assert headline_verdict(missed) == "MISSED"
    assert any(gave_out in reason for reason in missed.gives_out)


@pytest.mark.parametrize("p95", [10.0, None])
def test_token_answers_10_s_old_or_none_stored_miss(p95: float | None) -> None:
    assert headline_verdict(row(token_age_p95=p95)) == "MISSED"


def test_the_worst_limit_is_named_first() -> None:
    both = row(
        res_limit_share=1.5,
        hottest=PartitionLoad("due-shard-1", 1100.0, PARTITION_WRITE_UNITS),
    )
    assert both.gives_out[0].startswith("res.php requests")


def test_the_model_runs_the_stacks_services_to_every_tasks_end() -> None:
    """A minute of 10 tasks a second with every pingback lost: the real submit, poller and
    table model store every answer, each after the provider solved it."""
    minute = Scenario("b", "every pingback lost", 60.0)
    ran = run_row(10, minute, default_sizing())
    assert (ran.tasks, ran.lost) == (600, 0)
    assert ran.token_age_p95 is not None and ran.token_age_p95 > 0
    assert ran.res_requests_per_second > 0 and ran.table_requests_per_task > 1


def test_a_poller_past_the_fan_out_load_is_run_again_fanned_out() -> None:
    """100 tasks a second with every pingback lost for 10 minutes: one poller's CPU passes the
    load the product fans out at, so the row is the stack with every helper group sweeping."""
    fanned = run_row(100, SCENARIOS[1], default_sizing())
    assert fanned.pollers == default_sizing().poller_helpers + 1 and fanned.lost == 0
    alone_row = run_row(100, SCENARIOS[1], alone(default_sizing()))
    assert alone_row.pollers == 1 and alone_row.poller_cpu_busy > FAN_OUT_LOAD_SHARE
