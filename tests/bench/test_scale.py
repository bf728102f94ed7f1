"""The scale section's verdicts say MISSED when a row misses, and name what gave out first:
rows made up here, one limit passed at a time; and the model runs the stack's own services,
the poller fanned out as Lambda runs it."""

from __future__ import annotations

import dataclasses

import pytest

from bench.scale import START, alone, default_sizing, one_vcpu, run_row
from bench.scale_model import (
    PARTITION_WRITE_UNITS,
    WRITE_CPU_SECONDS,
    CapacityStore,
    PartitionLoad,
    SimClock,
)
from bench.scale_rows import (
    LAMBDA_ACCOUNT_CONCURRENCY,
    TARGET_RATE,
    WAYS_OF_WAITING,
    Row,
    Scenario,
    TokenBucket,
    scale_outcome,
)

pytestmark = pytest.mark.long_running


def row(**changes: object) -> Row:
    held = Row(
        rate=TARGET_RATE,
        scenario="b",
        sizing=default_sizing(),
        waiting="push",
        sample=6,
        tasks=216_000,
        lost=0,
        age_by_kind={"recaptcha": (3.0, 8.0)},
        token_age_p95=8.0,
        res_requests_per_second=9.0,
        res_limit_share=0.5,
        table_requests_per_task=2.5,
        hottest=PartitionLoad("due-shard-3", 900.0, PARTITION_WRITE_UNITS),
        concurrency={"submit": 65.0, "callback": 0.0, "poller": 1.0},
        usd_per_million=5.0,
        route_rates={"submit": 100.0, "GET": 0.0, "callback": 0.0},
        pingbacks_refused=0,
        poller_cpu_busy=0.5,
        pollers=8,
    )
    return dataclasses.replace(held, **changes)  # type: ignore[arg-type]


def headline_verdict(judged: Row) -> str:
    (headline,) = scale_outcome([judged]).headlines
    return headline.verdict


def test_a_row_inside_every_limit_with_fresh_tokens_is_met() -> None:
    assert row().gives_out == [] and row().met and headline_verdict(row()) == "met"


@pytest.mark.parametrize(
    ("changes", "gave_out"),
    [
        ({"lost": 1}, "fell behind"),
        ({"res_limit_share": 1.01}, "res.php requests"),
        ({"hottest": PartitionLoad("due-shard-3", 1001.0, PARTITION_WRITE_UNITS)}, "due-shard-3"),
        (
            {"concurrency": {"submit": LAMBDA_ACCOUNT_CONCURRENCY + 1.0, "callback": 0.0}},
            "Lambda concurrency",
        ),
        ({"route_rates": {"submit": 400.0, "GET": 0.0, "callback": 0.0}}, "(submit: 200%"),
        ({"route_rates": {"submit": 10.0, "GET": 900.0, "callback": 0.0}}, "(GET: 450%"),
        ({"pingbacks_refused": 12}, "12 pingbacks refused"),
        ({"poller_cpu_busy": 0.95}, "the poller's CPU"),
        ({"token_age_p95": 12.0}, "the pollers' pace"),
        ({"token_age_p95": None}, "the pollers' pace"),
        (
            {
                "sizing": dataclasses.replace(default_sizing(), provider_threads=(500, 500)),
                "provider_threads_needed": 1900,
            },
            "provider threads (1900 solving at once, 2 account(s) with 1000)",
        ),
    ],
)
def test_a_row_past_a_limit_is_missed_and_names_what_gave_out(
    changes: dict[str, object], gave_out: str
) -> None:
    missed = row(**changes)
    assert not missed.met
    assert any(gave_out in reason for reason in missed.gives_out), missed.gives_out


def test_the_headline_judges_loss_and_freshness() -> None:
    assert headline_verdict(row(lost=1)) == "MISSED"
    assert headline_verdict(row(token_age_p95=10.0)) == "MISSED"


def test_the_worst_limit_is_named_first() -> None:
    both = row(
        res_limit_share=1.5,
        hottest=PartitionLoad("due-shard-1", 1100.0, PARTITION_WRITE_UNITS),
    )
    assert both.gives_out[0].startswith("res.php requests")


def test_a_route_throttle_refuses_past_its_burst_and_refills_at_its_rate() -> None:
    """API Gateway's token bucket: ``burst`` requests at once, then ``rate`` a second."""
    bucket = TokenBucket(rate=2.0, burst=3.0, start=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert [bucket.take(0.5) for _ in range(2)] == [True, False]
    assert bucket.take(10.0) and bucket.take(10.0) and bucket.take(10.0)
    assert not bucket.take(10.0)


def test_a_slice_pays_its_share_of_what_the_stack_does_once() -> None:
    """A 1/5 slice runs every sweep of the stack, so a shard's Query and a lease write are a
    fifth of one in its CPU, requests and read units; a task's own write is the slice's whole."""
    clock = SimClock(START, vcpu_share=1.0)
    store = CapacityStore(clock, due_shards=4, sample=5)
    store.next_due_at(START, START + 60)
    store.acquire_poller_lease("holder", START, START + 70)
    assert store.requests == pytest.approx(5 / 5)
    assert clock.poller_cpu_seconds == pytest.approx(5 * WRITE_CPU_SECONDS / 5)
    assert store.units[1] == pytest.approx(4 * 0.5 / 5)
    store.mark_expired("70000000001", START)
    assert store.requests == pytest.approx(2.0)


def test_the_model_runs_the_stacks_services_to_every_tasks_end() -> None:
    """A minute of 10 tasks a second with every pingback lost: the real submit, poller and
    table model store every answer, each after the provider solved it; the run is judged for
    each way of waiting, a worker GETting every second making the most GETs."""
    minute = Scenario("b", "every pingback lost", 60.0, 0.0, 60.0)
    ran = run_row(10, minute, default_sizing())
    assert [judged.waiting for judged in ran] == list(WAYS_OF_WAITING)
    push, paced, every_second = ran
    assert (push.tasks, push.lost) == (600, 0)
    assert push.token_age_p95 is not None and push.token_age_p95 > 0
    assert push.res_requests_per_second > 0 and push.table_requests_per_task > 1
    assert push.gets_per_task == 0 < paced.gets_per_task < every_second.gets_per_task
    assert push.usd_per_million < paced.usd_per_million < every_second.usd_per_million


def test_a_refused_pingback_is_lost_to_the_nets_and_named() -> None:
    """A callback throttle of 1 a second (burst 1) at 10 pingbacks a second: most pingbacks
    get 429, the poller recovers their results, and the row names the refusals."""
    minute = Scenario("a", "none lost", 60.0, 0.0, 0.0)
    narrow = dataclasses.replace(
        default_sizing(), callback_route_rate=1.0, callback_route_burst=1.0
    )
    (judged, *_) = run_row(10, minute, narrow)
    assert judged.pingbacks_refused > 300 and judged.lost == 0
    assert any("pingbacks refused" in reason for reason in judged.gives_out)


# The bench's outage row, 2 minutes instead of 10, submits for 150 s: a backlog builds within
# the first minute, and its three rows take about 15 s of CPU, not 25 (make test runs them
# beside the local stacks).
SHORT_OUTAGE = Scenario("b", "every pingback lost 2 min, then restored", 150.0, 0.0, 120.0)


def test_the_stack_fans_out_on_a_backlog_and_one_vcpu_is_never_worse() -> None:
    """100 tasks a second with every pingback lost for 2 minutes: the real fan-out starts
    helpers at the defaults; with PollerMemorySize 1769 too (its CPU is never half busy, its
    backlog fans it out), and that row is no worse; with PollerHelpers 0 one invocation sweeps."""
    fanned = run_row(100, SHORT_OUTAGE, default_sizing())[0]
    assert fanned.pollers > 1 and fanned.lost == 0
    wide = run_row(100, SHORT_OUTAGE, one_vcpu(default_sizing()))[0]
    assert wide.pollers > 1 and wide.lost == 0
    assert wide.token_age_p95 is not None and fanned.token_age_p95 is not None
    assert wide.token_age_p95 <= fanned.token_age_p95 + 1.0
    assert run_row(100, SHORT_OUTAGE, alone(default_sizing()))[0].pollers == 1
