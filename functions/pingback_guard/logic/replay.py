"""Replay rules: a dead-lettered result is stored like any other, or the message fails again."""

from __future__ import annotations

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import StoreOutcome
from pingback_guard.logic.results import store_result
from pingback_guard.queue.dead_letter import decode_message


class ReplayService:
    def __init__(self, store: TaskStore) -> None:
        self._store = store

    def replay(self, message_body: str) -> StoreOutcome:
        """Raises on a store failure or a malformed message: SQS retries it, then parks it."""
        return store_result(self._store, decode_message(message_body))
