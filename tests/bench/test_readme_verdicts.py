"""The README's reference-run table ("## Benchmarks": figure | measured | target) cannot drift
from bench/RESULTS.md: each row's measured figures are the run's (in order, at the README's
precision) and its met/missed verdict is the run's. Editing a figure or a verdict in either file
fails here; a README row with no source named below fails too."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.cold_start import WORKER_PATHS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RESULTS = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
# A figure, not a digit inside a word (p95, in.php's 2captcha): 1, 0.30, 1,294, 11.088.
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
VERDICT = re.compile(r"\b(met|missed)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Stated:
    """What RESULTS.md states for one README row: its figures in order, its verdict, and a
    name the README's label must carry."""

    figures: str
    verdict: str
    named: str = ""


def table_rows(text: str, header_start: str) -> list[list[str]]:
    lines = text.split(header_start, 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]


def section(number: str) -> str:
    return RESULTS.split(f"\n## {number}. ", 1)[1].split("\n## ", 1)[0]


SUMMARY = table_rows(RESULTS, "| # | figure | this run | target | verdict |")


def summary(*figures: str) -> Callable[[], Stated]:
    """The summary rows whose figure starts with each of ``figures``, in that order; the
    verdict is the first row's."""

    def stated() -> Stated:
        rows = [next(row for row in SUMMARY if row[1].startswith(figure)) for figure in figures]
        return Stated(" ".join(row[2] for row in rows), rows[0][4])

    return stated


def cold_start() -> Stated:
    """Section 4's ratios: the callback's, then the worst of the worker's paths; the verdict
    is the summary's."""
    ratios = {row[0]: row[2] for row in table_rows(section("4"), "| handler | import + init")}
    worst = max(WORKER_PATHS, key=lambda handler: float(ratios[handler].rstrip("x")))
    verdict = summary("Cold start ÷ `import boto3`")().verdict
    return Stated(f"{ratios['callback']} {ratios[worst]}", verdict, worst.replace("_php", ".php"))


def scale_row(rate: str, scenario: str, deployed: str, wait: str) -> Callable[[], Stated]:
    """One row of section 9's table: its lost tasks and token p95, and its verdict."""

    def stated() -> Stated:
        rows = table_rows(section("9"), "| tasks/s | pingbacks | deployed |")
        row = next(row for row in rows if row[:4] == [rate, scenario, deployed, wait])
        return Stated(f"{row[6]} {row[7]}", row[13])

    return stated


# README figure (the start of its first cell) -> where RESULTS.md states it.
SOURCES: dict[str, Callable[[], Stated]] = {
    "first callback: table writes / reads": summary("Callback, first delivery"),
    "poller: items read per due task": summary("Poller sweep: items read", "Scan-based poller"),
    "res.php requests per recovered task": summary("res.php requests / recovered task"),
    "cold start (import + init)": cold_start,
    "bundle": summary("Deployed bundle"),
    "USD per million tasks, stack only": summary(
        "Cost per million tasks, 1% callbacks lost",
        "Cost per million tasks, 20% callbacks lost",
        "Fixed monthly cost",
    ),
    "**USD per million tasks, wait included": summary("Cost per million tasks, wait included"),
    "the worker's wait alone": summary("the worker's wait, USD per million tasks"),
    "pingback's arrival at the callback": summary("pushed worker: p95"),
    "every pingback lost: p95 token age": summary("every pingback lost: p95 token age"),
    "fresh stack, every pingback lost": summary("fresh stack, every pingback lost"),
    "no pingback lost: extra `res.php`": summary(
        "no pingback lost: extra res.php", "fresh stack, no pingback lost"
    ),
    "every pingback lost: `res.php` requests per task": summary(
        "every pingback lost: res.php requests per task"
    ),
    "100 tasks/s, every pingback lost 10 min": scale_row("100", "b", "defaults", "push"),
    "**300 tasks/s, every pingback lost 10 min": summary(
        "300 tasks/s, every pingback lost 10 min, defaults"
    ),
    "tokens `GET` called usable": summary("tokens GET called usable"),
}

README_ROWS = table_rows(README.split("\n## Benchmarks\n", 1)[1], "| figure | measured | target |")


def source_of(figure: str) -> Callable[[], Stated]:
    (source,) = [stated for start, stated in SOURCES.items() if figure.startswith(start)]
    return source


def figures(text: str) -> list[str]:
    return NUMBER.findall(text.replace(",", ""))


def appear_in_order(stated: list[str], measured: list[str]) -> bool:
    """Each of the README's figures matches the run's next one at the README's precision."""
    remaining = iter(measured)
    for figure in stated:
        places = len(figure.split(".")[1]) if "." in figure else 0
        if not any(round(float(value), places) == float(figure) for value in remaining):
            return False
    return True


def test_every_readme_row_names_its_source_in_results() -> None:
    assert len(README_ROWS) == len(SOURCES)
    for row in README_ROWS:
        source_of(row[0])


@pytest.mark.parametrize("row", README_ROWS, ids=[row[0][:40] for row in README_ROWS])
def test_a_readme_rows_figures_and_verdict_are_the_runs(row: list[str]) -> None:
    figure, measured, target = row
    stated = source_of(figure)()
    if stated.named:
        assert f"({stated.named})" in figure, (figure, stated)
    assert appear_in_order(figures(measured), figures(stated.figures)), (measured, stated)
    said = VERDICT.search(target)
    assert (said[1].lower() if said else "") == stated.verdict.lower(), (target, stated)


@pytest.mark.parametrize(
    ("stated", "measured", "matches"),
    [
        (["8.2"], ["0", "8.2"], True),
        (["8.3"], ["0", "8.2"], False),
        (["11.09", "10.80"], ["11.088", "10.796"], True),
        (["10.80", "11.09"], ["11.088", "10.796"], False),
        (["1.0"], ["1"], True),
    ],
)
def test_figures_match_in_order_at_the_readmes_precision(
    stated: list[str], measured: list[str], matches: bool
) -> None:
    assert appear_in_order(stated, measured) is matches
