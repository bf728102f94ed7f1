"""Figure 6b: freshness from a fresh stack's first task (issue 33), in real time at defaults.

Each run starts a new simulator and a new local stack per way of waiting (push, paced GETs, a
GET every second: figure 6's workers), template and simulator at their defaults, nothing learned
and no poller invocation yet. Phase one: every pingback lost, TASKS tasks spread over two
minutes, one worker each: the token's true age when the worker has it. Phase two, on the same
stack: no pingback lost, the extra res.php requests per task. Three runs, each its own seed;
printed, never asserted (a real-time figure on a shared machine).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bench.freshness import (
    AGE_TARGET_SECONDS,
    EXTRA_REQUESTS_TARGET,
    SEED,
    VARIANTS,
    Phase,
    TaskRun,
    Variant,
    fresh_stack,
    run_phase,
)
from bench.outcome import Headline, SectionOutcome, markdown_table, number

KEY = "fresh_stack"
TITLE = "6b. Freshness from a fresh stack's first task (every pingback lost, real time)"
RUNS = int(os.environ.get("BENCH_FRESH_RUNS", "3"))
SPREAD_SECONDS = 120.0
OLDEST_SHOWN = 3


@dataclass(frozen=True)
class FreshRun:
    run: int
    variant: str
    lost: Phase
    delivered: Phase


def measure_fresh_stack(runs: int = RUNS) -> SectionOutcome:
    measured: list[FreshRun] = []
    for run in range(runs):
        with ThreadPoolExecutor(len(VARIANTS)) as pool:
            measured.extend(pool.map(_one, VARIANTS, [run] * len(VARIANTS)))
    return fresh_stack_outcome(measured)


def _one(variant: Variant, run: int) -> FreshRun:
    with fresh_stack(variant, SEED + run) as (stack, simulator):
        lost = run_phase(
            variant, stack, simulator, pingbacks_lost=True, spread_seconds=SPREAD_SECONDS
        )
        delivered = run_phase(
            variant, stack, simulator, pingbacks_lost=False, spread_seconds=SPREAD_SECONDS
        )
    return FreshRun(run + 1, variant.key, lost, delivered)


def fresh_stack_outcome(measured: Sequence[FreshRun]) -> SectionOutcome:
    keys = [variant.key for variant in VARIANTS]
    rows, worst = [], dict.fromkeys(keys, 0.0)
    extra_worst = dict.fromkeys(keys, 0.0)
    for found in measured:
        lost, delivered = found.lost, found.delivered
        p95 = lost.age_percentile(0.95)
        worst[found.variant] = max(worst[found.variant], p95 if p95 is not None else float("inf"))
        extra = delivered.res_requests_per_task
        extra_worst[found.variant] = max(extra_worst[found.variant], extra)
        via = Counter(task.delivered_via or "-" for task in lost.solved)
        oldest = sorted(lost.solved, key=lambda task: task.true_age or 0.0, reverse=True)
        rows.append(
            [
                str(found.run),
                found.variant,
                f"{len(lost.solved)}/{len(lost.tasks)}",
                ", ".join(f"{path} {count}" for path, count in sorted(via.items())),
                _seconds(lost.age_percentile(0.5)),
                _seconds(p95),
                _seconds(lost.age_percentile(1.0)),
                "; ".join(_oldest(task) for task in oldest[:OLDEST_SHOWN]),
                number(lost.res_requests_per_task),
                number(extra),
            ]
        )
    figures = " / ".join(_seconds(worst[key]) for key in keys)
    extras = " / ".join(number(extra_worst[key]) for key in keys)
    return SectionOutcome(
        key=KEY,
        title=TITLE,
        data={
            "runs": [
                {
                    "run": found.run,
                    "variant": found.variant,
                    "lost_p95_seconds": found.lost.age_percentile(0.95),
                    "lost_ages": [task.true_age for task in found.lost.tasks],
                    "lost_res_requests_per_task": found.lost.res_requests_per_task,
                    "delivered_res_requests_per_task": found.delivered.res_requests_per_task,
                }
                for found in measured
            ]
        },
        headlines=[
            Headline(
                "fresh stack, every pingback lost: worst p95 token age at the worker over the"
                f" runs, push / paced / 1 s ({len(measured) // len(keys)} runs)",
                figures,
                f"< {number(AGE_TARGET_SECONDS)} s",
                all(value < AGE_TARGET_SECONDS for value in worst.values()),
            ),
            Headline(
                "fresh stack, no pingback lost: most extra res.php requests per task over the"
                " runs, push / paced / 1 s",
                extras,
                f"<= {number(EXTRA_REQUESTS_TARGET)}",
                all(value <= EXTRA_REQUESTS_TARGET for value in extra_worst.values()),
            ),
        ],
        details=markdown_table(
            [
                "run",
                "way of waiting",
                "solved in time",
                "delivered via",
                "age p50",
                "age p95",
                "age max",
                "oldest tokens",
                "res.php / task (lost)",
                "extra res.php / task (delivered)",
            ],
            rows,
        ),
    )


def _oldest(task: TaskRun) -> str:
    age, solved = number(task.true_age or 0.0, 1), number(task.solve_seconds, 1)
    return f"{age} s ({task.delivered_via}, solved at {solved} s)"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{number(value, 1)} s"
