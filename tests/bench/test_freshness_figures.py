"""The freshness section's arithmetic on a made-up run: no stack, no timing."""

from __future__ import annotations

import pytest

from bench.freshness import (
    Deployed,
    Phase,
    TaskRun,
    freshness_outcome,
    percentile,
    phase_figures,
    wait_usage,
)


def task(n: int, age: float | None, usable: bool = True, gets: int = 10) -> TaskRun:
    return TaskRun(
        task_id=str(n),
        status="SOLVED" if age is not None else "PENDING",
        delivered_via="read_through" if age is not None else None,
        true_age=age,
        claimed_age=None if age is None else age + 0.5,
        claimed_usable=usable,
        bounds_hold=age is not None,
        gets=gets,
        after_callback=None if age is None else age / 2,
        solve_seconds=30.0 - n,
    )


def phase(variant: str, lost: bool, ages: list[float | None]) -> Phase:
    return Phase(
        variant=variant,
        pingbacks_lost=lost,
        tasks=[task(n, age) for n, age in enumerate(ages)],
        res_get_requests=len(ages) if lost else 0,
        invocations={"GetTaskFunction": [10.0] * 10 * len(ages), "PollerFunction": [100.0]},
        table_calls={"GetTaskFunction:GetItem": 10 * len(ages), "PollerFunction:Query": 8},
        seconds=60.0,
    )


@pytest.mark.parametrize(
    ("fraction", "expected"), [(0.5, 5.0), (0.95, 10.0), (1.0, 10.0), (0.1, 1.0)]
)
def test_percentile_is_nearest_rank(fraction: float, expected: float) -> None:
    assert percentile([float(n) for n in range(10, 0, -1)], fraction) == expected


FUNCTIONS = {
    "GetTaskFunction": Deployed(memory_mb=1024, traced=True),
    "PushFunction": Deployed(memory_mb=512, traced=False),
}


def test_percentile_of_nothing_is_none() -> None:
    assert percentile([], 0.95) is None


def test_unusable_and_wrongly_usable_tokens_are_counted_against_the_truth() -> None:
    figures = phase_figures(
        Phase(
            variant="v",
            pingbacks_lost=True,
            tasks=[task(1, 10.0), task(2, 130.0, usable=True), task(3, 125.0, usable=False)],
            res_get_requests=3,
            invocations={},
            table_calls={},
            seconds=1.0,
        ),
        lifetime=120.0,
        functions=FUNCTIONS,
    )
    assert figures["unusable_when_worker_had_it"] == 2
    assert figures["called_usable_but_was_not"] == 1
    assert figures["res_get_requests_per_task"] == 1.0


def test_the_wait_is_what_the_worker_s_gets_and_pushes_cost_per_task() -> None:
    pushed = Phase(
        variant="push",
        pingbacks_lost=False,
        tasks=[task(1, 1.0, gets=0), task(2, 2.0, gets=2)],
        res_get_requests=0,
        invocations={"GetTaskFunction": [10.0, 10.0, 10.0], "PushFunction": [20.0, 20.0]},
        table_calls={
            "GetTaskFunction:GetItem": 4,  # 2 GETs, and the harness's own read of each task
            "PushFunction:GetItem": 2,
            "PollerFunction:Query": 8,
        },
        seconds=120.0,
        websocket_messages=4,
        connection_seconds=120.0,
    )
    usage = wait_usage(pushed, FUNCTIONS)
    assert usage.api_requests == 1  # 2 GETs over 2 tasks; the poller's Query is not the wait's
    assert usage.lambda_requests == pytest.approx((2 + 2) / 2)
    assert usage.lambda_gb_seconds == pytest.approx((2 * 0.01 + 2 * 0.02 / 2) / 2)
    assert usage.read_units == pytest.approx((2 + 2) / 2)
    assert usage.traces == 0.0  # the template's default Tracing (PassThrough) samples nothing
    assert (usage.websocket_messages, usage.connection_minutes) == (2, 1)


def test_outcome_judges_the_targets_on_the_defaults() -> None:
    phases = [
        phase(variant, lost, [5.0, 9.0] if lost else [1.0, 2.0])
        for variant in ("push", "paced", "every_second")
        for lost in (False, True)
    ]
    outcome = freshness_outcome(phases, lifetime=120.0)
    verdicts = {headline.figure: headline.met for headline in outcome.headlines}
    lost = "every pingback lost: p95 token age when the worker has it, push / paced / 1 s"
    assert verdicts[lost] is True
    assert verdicts["no pingback lost: extra res.php requests per task, push / paced / 1 s"] is True
    assert verdicts["tokens GET called usable that were not (all phases)"] is True
    assert "push/lost" in outcome.data["phases"]
    # The tail, with when each of its tasks was solved
    assert (
        "Every pingback lost, the pushed worker's oldest tokens: 9.0 s (solved 29.0 s after"
        " submit), 5.0 s (solved 30.0 s after submit)." in outcome.details
    )
