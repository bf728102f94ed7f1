"""The provider accounts' part of a chaos report, from the simulator's truth."""

from __future__ import annotations

from typing import Any

from infra.chaos.accounts import accounts_report, peak_solving, stack_account_keys
from infra.chaos.scenario import Window

STARTED = 1_000.0


def task(account: int, submitted: float, started: float | None, finished: float) -> dict[str, Any]:
    return {
        "account": account,
        "submitted_at": STARTED + submitted,
        "started_at": None if started is None else STARTED + started,
        "finished_at": STARTED + finished,
    }


def test_peak_counts_tasks_holding_a_thread_at_once_and_frees_before_it_takes() -> None:
    tasks = [task(0, 0, 0, 10), task(0, 1, 1, 5), task(0, 5, 5, 8), task(0, 9, None, 12)]
    # At 5 one task finishes as another starts: 2 at once, never 3; the queued-less last one
    # holds its thread from its submit.
    assert peak_solving(tasks) == 2
    assert peak_solving([]) == 0


def test_report_counts_per_account_and_where_submits_went_while_the_first_was_down() -> None:
    truth = [task(0, 1, 1, 9), task(1, 12, 12, 20), task(1, 14, 14, 30), task(0, 31, 31, 40)]
    report = accounts_report(truth, [2, 3], {"busy_refused": 4}, Window(10, 20), STARTED)
    assert report["accounts"] == {
        "1": {"threads": 2, "tasks": 2, "peak_solving": 1},
        "2": {"threads": 3, "tasks": 2, "peak_solving": 2},
    }
    assert report["while_first_down"] == {"1": 0, "2": 2}
    assert report["plan"] == {"busy_refused": 4}
    assert "while_first_down" not in accounts_report(truth, [2, 3], {}, None, STARTED)


def test_extra_simulator_accounts_are_named_as_the_stack_names_them() -> None:
    assert stack_account_keys(["k1", "k2", "k3"]) == {"2": "k2", "3": "k3"}
    assert stack_account_keys(["k1"]) == {}
