"""Helpers of the local runtime's tests."""

import os
from pathlib import Path
from typing import Any

from infra.local import LocalStack

FIXTURE_TEMPLATE = Path(__file__).parent / "fixtures" / "template.yaml"
PROVIDER_API_KEY = "fixture-provider-key-5b2f"
LEAK_SENTINEL = "PINGBACK_GUARD_TEST_PARENT_ONLY"
# A simulator that solves every task within 1-2 s (a module's SIMULATOR adds its seed).
QUICK_SOLVES = {
    "solve_time": {"kind": "uniform", "min_seconds": 1, "max_seconds": 2},
    "unsolvable_rate": 0,
}


def child_pids() -> set[int]:
    """Processes started by this test process, however deep."""
    return descendant_pids(os.getpid())


def descendant_pids(root: int) -> set[int]:
    """Every process below `root` (Linux /proc), however deep."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def table_item(stack: LocalStack, key: str) -> dict[str, Any]:
    """The tasks table's item under ``key`` as DynamoDB returns it ({} when there is none)."""
    item: dict[str, Any] = (
        stack.ready.aws_client("dynamodb")
        .get_item(TableName=stack.ready.tasks_table, Key={"task_id": {"S": key}})
        .get("Item", {})
    )
    return item


def task_status(stack: LocalStack, task_id: str) -> str:
    return str(table_item(stack, task_id).get("status", {}).get("S", ""))
