"""What a worker sees of a task."""

from __future__ import annotations

from typing import Any

from pingback_guard.data.store import TaskStore


class TaskQuery:
    def __init__(self, store: TaskStore) -> None:
        self._store = store

    def view(self, task_id: str, now: float) -> dict[str, Any] | None:
        task = self._store.get(task_id)
        return task.view(now) if task else None
