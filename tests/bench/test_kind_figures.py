"""Per-kind figures (bench/kind_freshness.py and the cost section's per-kind table): computed from
made-up observations, and their verdicts say MISSED when a kind loses or changes an answer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.cost_section import KindCost, kind_cost_headlines, table_units
from bench.kind_freshness import KindTask, ScaledClock, kind_figures, kind_freshness_outcome
from bench.table_paths import PathMeasurements
from tests.bench.test_verdicts import verdicts


def task(kind: str = "image", **changes: object) -> KindTask:
    done = KindTask(
        kind=kind,
        submitted_at=1000.0,
        finished_at=1006.0,
        first_check_at=1008.0,
        received_at=1008.5,
        exact=True,
        fits=True,
        res_requests=1.0,
        checks=1,
        usable_for=None,
    )
    return replace(done, **changes)  # type: ignore[arg-type]


def test_each_kind_gets_its_own_ages_requests_and_lifetime() -> None:
    tasks = [
        task("image"),
        task("image", finished_at=1002.0, received_at=1010.0, res_requests=2.0, checks=2),
        *[
            task(
                "recaptcha",
                finished_at=1020.0,
                received_at=1023.0,
                res_requests=0.25,
                usable_for=120.0 + n / 10,
            )
            for n in range(4)
        ],
    ]

    figures = kind_figures(tasks)

    image, recaptcha = figures["image"], figures["recaptcha"]
    assert (image.tasks, image.age_p50, image.age_p95) == (2, 2.5, 8.0)
    assert image.res_requests_per_task == 1.5 and image.checks_per_task == 1.5
    assert image.usable_for is None and image.first_check_p50 == 8.0
    assert recaptcha.res_requests_per_task == 0.25 and recaptcha.usable_for == 120.0
    assert recaptcha.solve_p50 == 20.0


def test_a_lost_task_counts_as_lost_and_not_in_the_ages_or_requests() -> None:
    figures = kind_figures([task(), task(received_at=None, res_requests=5.0, checks=5)])
    row = figures["image"]
    assert (row.lost, row.wrong, row.age_p95, row.res_requests_per_task) == (1, 0, 2.5, 1.0)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [({}, "met"), ({"received_at": None}, "MISSED"), ({"exact": False}, "MISSED")],
)
def test_every_kind_must_lose_nothing_and_keep_its_answer_exact(
    changes: dict[str, object], expected: str
) -> None:
    tasks = [task("image"), task("geetest", **changes)]
    assert list(verdicts(kind_freshness_outcome(kind_figures(tasks))).values()) == [expected]


def test_no_task_at_all_is_not_a_pass() -> None:
    assert list(verdicts(kind_freshness_outcome({})).values()) == ["MISSED"]


def test_a_misfit_answer_is_counted_but_still_the_provider_s() -> None:
    row = kind_figures([task(fits=False)])["image"]
    assert (row.misfits, row.wrong, row.lost) == (1, 0, 0)


def test_the_scaled_clock_maps_real_seconds_to_faster_virtual_ones() -> None:
    clock = ScaledClock(5.0)
    assert clock.virtual(clock.origin + 2.0) == pytest.approx(clock.origin + 10.0)
    assert clock.real_seconds(10.0) == 2.0 and clock.real_seconds(-1.0) == 0.0


def item(answer: str) -> dict[str, dict[str, str]]:
    return {"task_id": {"S": "123"}, "status": {"S": "SOLVED"}, "solution": {"S": answer}}


def test_a_longer_answer_costs_more_write_units_per_started_kilobyte() -> None:
    def units(answer: str) -> int:
        measured = PathMeasurements({}, item(""), item(answer), 0, set())
        return table_units(measured).result_write

    # The item's names and other values take 30 bytes; a write unit is 1 KB; UTF-8 bytes count.
    assert [units("a" * 994), units("a" * 995), units("й" * 1200)] == [1, 2, 3]


def kind_cost(per_million: float, exact: bool = True) -> KindCost:
    measured = PathMeasurements({}, item(""), item("x"), 0, set())
    return KindCost(
        answer_bytes=1, units=table_units(measured), per_million=per_million, exact=exact
    )


def test_the_kind_cost_headlines_name_the_cheapest_and_dearest_and_judge_exactness() -> None:
    costs = {"image": kind_cost(8.5), "recaptcha": kind_cost(9.75), "bls": kind_cost(9.0)}
    figures = kind_cost_headlines(costs)
    assert figures[0].value == "image USD 8.500 .. recaptcha USD 9.750"
    assert figures[1].verdict == "met"
    costs["bls"] = kind_cost(9.0, exact=False)
    assert kind_cost_headlines(costs)[1].verdict == "MISSED"
