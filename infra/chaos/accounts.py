"""The provider accounts in a chaos run: each account's tasks and the most it had solving at
once against its thread plan, the submits its plan refused, and where the submits went while
the first account refused them (infra.chaos.scenario.AlarmFaults.first_account_down)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from infra.chaos.scenario import Window


def stack_account_keys(api_keys: Sequence[str]) -> dict[str, str]:
    """The simulator's accounts after the first, named as the stack's ProviderExtraAccounts
    names them: "2", "3", ..."""
    return {str(number): key for number, key in enumerate(api_keys[1:], start=2)}


def accounts_report(
    truth: Sequence[Mapping[str, Any]],
    threads: Sequence[int],
    plan_counts: Mapping[str, int],
    first_account_down: Window | None,
    started: float,
) -> dict[str, Any]:
    """Per account (1 = the simulator's first): threads, tasks, peak solving at once; the
    submits the plans refused or queued; the tasks submitted while the first account was down."""
    by_account: dict[str, Any] = {}
    for number, plan in enumerate(threads):
        own = [task for task in truth if task["account"] == number]
        by_account[str(number + 1)] = {
            "threads": plan,
            "tasks": len(own),
            "peak_solving": peak_solving(own),
        }
    report: dict[str, Any] = {"accounts": by_account, "plan": dict(plan_counts)}
    if first_account_down is not None and first_account_down.length > 0:
        low, high = started + first_account_down.start, started + first_account_down.end
        during = [task for task in truth if low <= task["submitted_at"] < high]
        report["while_first_down"] = {
            str(number + 1): sum(1 for task in during if task["account"] == number)
            for number in range(len(threads))
        }
    return report


def peak_solving(tasks: Sequence[Mapping[str, Any]]) -> int:
    """The most tasks holding a thread at the same moment (a task holds one from its start,
    queued or not, until it finishes)."""
    edges = sorted(
        [(float(task["started_at"] or task["submitted_at"]), 1) for task in tasks]
        + [(float(task["finished_at"]), -1) for task in tasks]
    )
    peak = running = 0
    for _at, step in edges:
        running += step
        peak = max(peak, running)
    return peak
