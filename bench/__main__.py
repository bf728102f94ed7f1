"""`python -m bench`: run every benchmark section, write bench/results.json and
bench/RESULTS.md, and print the Markdown report.

A section that fails prints its error and is reported as failed; the others still run.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.cold_start import measure_cold_start_section
from bench.cost_section import cost_outcome
from bench.fresh_stack import KEY as FRESH_STACK
from bench.fresh_stack import TITLE as FRESH_STACK_TITLE
from bench.fresh_stack import measure_fresh_stack
from bench.freshness import measure_freshness
from bench.hostile_input import SECTION as HOSTILE_INPUT
from bench.hostile_input import TITLE as HOSTILE_INPUT_TITLE
from bench.hostile_input import measure_hostile_input
from bench.kind_freshness import KEY as KINDS
from bench.kind_freshness import TITLE as KINDS_TITLE
from bench.kind_freshness import measure_kind_freshness
from bench.outcome import FAILED, SectionOutcome, one_line
from bench.poller_reads import measure_poller_reads
from bench.report import RunInfo, markdown_report, results_document
from bench.res_requests import measure_res_requests
from bench.scale import KEY as SCALE
from bench.scale import TITLE as SCALE_TITLE
from bench.scale import measure_scale
from bench.table_paths import PathMeasurements, measure_paths, table_paths_outcome
from bench.task_cost import KEY as TASK_COST
from bench.task_cost import TITLE as TASK_COST_TITLE
from bench.task_cost import task_cost_outcome

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_JSON = BENCH_DIR / "results.json"
RESULTS_MARKDOWN = BENCH_DIR / "RESULTS.md"

Section = tuple[str, str, Callable[[], SectionOutcome]]


class PathMeasurementsOnce:
    """Figures 1 and 5 share one run of the paths; a failed run is tried again by the next."""

    def __init__(self) -> None:
        self._measured: PathMeasurements | None = None

    def get(self) -> PathMeasurements:
        if self._measured is None:
            self._measured = measure_paths()
        return self._measured


def sections() -> list[Section]:
    paths = PathMeasurementsOnce()
    return [
        ("table_requests", "1. Table requests per task", lambda: table_paths_outcome(paths.get())),
        ("poller_reads", "2. Poller reads per due task", measure_poller_reads),
        ("res_requests", "3. res.php requests per recovered task", measure_res_requests),
        ("cold_start", "4. Cold start and bundle size", measure_cold_start_section),
        ("cost", "5. Cost per million tasks", lambda: cost_outcome(paths.get())),
        ("freshness", "6. Freshness and its checking cost", measure_freshness),
        (FRESH_STACK, FRESH_STACK_TITLE, measure_fresh_stack),
        (KINDS, KINDS_TITLE, measure_kind_freshness),
        (SCALE, SCALE_TITLE, measure_scale),
        (HOSTILE_INPUT, HOSTILE_INPUT_TITLE, measure_hostile_input),
    ]


def run_section(key: str, title: str, run: Callable[[], SectionOutcome]) -> SectionOutcome:
    print(f"bench: {title} ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        outcome = run()
    except Exception as error:
        traceback.print_exc()
        outcome = SectionOutcome(key=key, title=title, status=FAILED, note=one_line(error))
    print(
        f"bench: {title}: {outcome.status} in {time.monotonic() - started:.0f} s", file=sys.stderr
    )
    return outcome


def current_commit() -> str:
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=BENCH_DIR,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return found.stdout.strip()


def main() -> int:
    """`python -m bench [KEY ...]`: every section, or only those named (printed, not written)."""
    only = set(sys.argv[1:])
    started_utc = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    started = time.monotonic()
    load_at_start = os.getloadavg()[0]
    outcomes = [run_section(*section) for section in sections() if not only or section[0] in only]
    measured = {outcome.key: outcome for outcome in outcomes}
    if "cost" in measured and "freshness" in measured:
        outcomes.append(
            run_section(
                TASK_COST,
                TASK_COST_TITLE,
                lambda: task_cost_outcome(measured["cost"], measured["freshness"]),
            )
        )
    run = RunInfo(
        started_utc=started_utc,
        duration_seconds=time.monotonic() - started,
        commit=current_commit(),
        python=platform.python_version(),
        machine=f"{platform.machine()}, {_cpu_count()} CPUs",
        load_averages=(load_at_start, os.getloadavg()[0]),
    )
    report = markdown_report(run, outcomes)
    if not only:
        RESULTS_JSON.write_text(json.dumps(results_document(run, outcomes), indent=2) + "\n")
        RESULTS_MARKDOWN.write_text(report)
    print(report)
    return 0


def _cpu_count() -> int:
    return os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
