"""Counters of what the simulator was asked and what it did."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Final

# Every group starts with these names at 0 so readers can index without guessing.
STAT_GROUPS: Final[Mapping[str, tuple[str, ...]]] = {
    "in": ("requests", "accepted", "rejected"),
    "in_errors": (),
    "res": ("requests", "batch_requests", "batch_ids", "injected_5xx", "injected_slow"),
    "res_actions": ("get", "getbalance", "threadsinfo", "reportbad", "reportgood", "other"),
    "plan": ("busy_refused", "queued", "rate_limited"),
    "pingbacks": ("sent", "delivered", "failed", "dropped", "duplicated", "refused_non_loopback"),
}


class Counters:
    """Thread-safe counts, grouped as in `STAT_GROUPS`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, Counter[str]] = {
            group: Counter(dict.fromkeys(names, 0)) for group, names in STAT_GROUPS.items()
        }

    def add(self, group: str, name: str, amount: int = 1) -> None:
        with self._lock:
            self._groups[group][name] += amount

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {group: dict(counts) for group, counts in self._groups.items()}
