"""What a worker sees of a task."""

from __future__ import annotations

from typing import Any

from pingback_guard.data.store import TaskStore
from pingback_guard.logic.access import may_access


class TaskQuery:
    def __init__(self, store: TaskStore, admin_principal_arn: str = "") -> None:
        self._store = store
        self._admin_principal_arn = admin_principal_arn

    def view(self, task_id: str, now: float, principal: str) -> dict[str, Any] | None:
        """None for an unknown task and for another principal's task alike."""
        task = self._store.get(task_id)
        if task is None or not may_access(task, principal, self._admin_principal_arn):
            return None
        return task.view(now)
