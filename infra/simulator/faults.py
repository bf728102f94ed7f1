"""The faults in force right now, changeable while the simulator runs."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from infra.simulator.config import Faults


class FaultControl:
    """Holds the current `Faults`; readers see either the old or the new set, never a mix."""

    def __init__(self, initial: Faults) -> None:
        self._lock = threading.Lock()
        self._current = initial

    @property
    def current(self) -> Faults:
        return self._current

    def update(self, changes: Mapping[str, object]) -> Faults:
        """Applies `changes` (fault name -> JSON value); raises ConfigError and keeps the old set
        when a change is invalid."""
        with self._lock:
            self._current = self._current.updated(changes)
            return self._current
