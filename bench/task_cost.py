"""Figure 7: what a task costs with the worker's wait included (issue 24's honest headline).

Section 5 prices the stack with one GET per task; section 6 measures what each way of waiting
really costs. A task as a worker using the client pays it: section 5's cost less its one GET,
plus the measured wait (no pingback lost: the healthy case, as section 5's 1% lost nearly is).
"""

from __future__ import annotations

from bench.cost import Usage, per_million_tasks
from bench.outcome import FAILED, Headline, SectionOutcome, markdown_table, number

KEY = "task_cost"
TITLE = "7. A task's cost with the worker's wait included, USD per million tasks"
TARGET_PER_MILLION = 12.0
MODES = (("push", "push"), ("paced", "paced GET"), ("every_second", "1 s GET"))
LOST = "1% lost"


def task_cost_outcome(cost: SectionOutcome, freshness: SectionOutcome) -> SectionOutcome:
    if FAILED in (cost.status, freshness.status):
        return SectionOutcome(KEY, TITLE, FAILED, note="needs sections 5 and 6")
    stack = float(cost.data["totals_per_million_tasks"][LOST])
    one_get = sum(per_million_tasks(Usage(**cost.data["path_usage_per_task"]["get_task"])).values())
    waits = {
        mode: float(freshness.data["phases"][f"{mode}/delivered"]["wait_usd_per_million_tasks"])
        for mode, _ in MODES
    }
    totals = {mode: stack - one_get + wait for mode, wait in waits.items()}
    return SectionOutcome(
        key=KEY,
        title=TITLE,
        data={
            "stack_per_million_1pct_lost": stack,
            "one_get_per_million": one_get,
            "wait_per_million": waits,
            "total_per_million": totals,
        },
        headlines=[
            Headline(
                "Cost per million tasks, wait included (1% lost): push / paced GET / 1 s GET",
                " / ".join(f"USD {number(totals[mode])}" for mode, _ in MODES),
                f"push <= USD {TARGET_PER_MILLION:.0f}",
                totals["push"] <= TARGET_PER_MILLION,
            )
        ],
        details=markdown_table(
            [
                "way of waiting",
                "stack (section 5) less its one GET",
                "the wait (section 6)",
                "task",
            ],
            [
                [label, number(stack - one_get), number(waits[mode]), number(totals[mode])]
                for mode, label in MODES
            ],
        ),
    )
