"""The counts a runtime part (function pool, queue poller, pipe, bus) keeps while its threads
work, read whole for the control endpoint's stats."""

import threading
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class SharedStats:
    """Subclasses declare their counts as fields. Updates and reads hold one lock, so a reader
    never sees half of an update that changes several counts."""

    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, count in counts.items():
                setattr(self, name, getattr(self, name) + count)

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                stat.name: getattr(self, stat.name)
                for stat in fields(self)
                if not stat.name.startswith("_")
            }
