"""What every check of a chaos run answers: the counts and ids it found, and whether it passed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar


@dataclass
class CheckVerdict:
    """Passes when each field named in ``FAILURES`` is empty (no ids, zero); its JSON is every
    field and that answer."""

    FAILURES: ClassVar[tuple[str, ...]] = ()

    @property
    def passed(self) -> bool:
        return not any(getattr(self, name) for name in self.FAILURES)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}
