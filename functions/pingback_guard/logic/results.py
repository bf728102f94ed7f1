"""The one rule for storing any delivered result, whichever path brought it."""

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import StoreOutcome, TaskResult


def store_result(store: TaskStore, result: TaskResult) -> StoreOutcome:
    """A token is a solution (first one wins); an error code marks the task FAILED."""
    if result.is_failure:
        return store.record_failure(result)
    return store.record_result(result)
