"""The run's outcomes as results.json and as the Markdown of bench/RESULTS.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.outcome import MEASURED, SectionOutcome, markdown_table


@dataclass(frozen=True)
class RunInfo:
    started_utc: str
    duration_seconds: float
    commit: str
    python: str
    machine: str
    load_averages: tuple[float, float]
    """1-minute load average at the start and the end: above the CPU count, timings inflate."""

    def describe(self) -> str:
        return (
            f"Run {self.started_utc} UTC at commit `{self.commit}` on {self.machine}"
            f" (1-minute load average {self.load_averages[0]:.1f} at the start,"
            f" {self.load_averages[1]:.1f} at the end), Python {self.python};"
            f" the whole run took {self.duration_seconds:.0f} s."
        )


def results_document(run: RunInfo, outcomes: Sequence[SectionOutcome]) -> dict[str, Any]:
    return {
        "run": run.__dict__,
        "sections": {outcome.key: outcome.to_json() for outcome in outcomes},
    }


def headline_rows(outcomes: Sequence[SectionOutcome]) -> list[list[str]]:
    rows = []
    for number, outcome in enumerate(outcomes, start=1):
        if outcome.status != MEASURED and not outcome.headlines:
            rows.append([str(number), outcome.title, f"{outcome.status}: {outcome.note}", "", ""])
        for headline in outcome.headlines:
            value = headline.value if outcome.status == MEASURED else outcome.status
            rows.append([str(number), headline.figure, value, headline.target, headline.verdict])
    return rows


def markdown_report(run: RunInfo, outcomes: Sequence[SectionOutcome]) -> str:
    lines = [
        "# pingback-guard benchmark results",
        "",
        "Reference run of `make bench` (`python -m bench`). What each figure means, how it is"
        " measured and what is weak about it: [docs/benchmarks.md](../docs/benchmarks.md).",
        "",
        run.describe(),
        "",
        *markdown_table(["#", "figure", "this run", "target", "verdict"], headline_rows(outcomes)),
    ]
    for outcome in outcomes:
        lines += ["", f"## {outcome.title}", ""]
        if outcome.status != MEASURED:
            lines += [f"**{outcome.status}**: {outcome.note}", ""]
        lines += outcome.details
    return "\n".join(lines) + "\n"
