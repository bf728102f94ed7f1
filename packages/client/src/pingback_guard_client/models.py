"""What the stack answers, as typed values."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

SOLVED = "SOLVED"
FINAL_STATUSES = frozenset({"SOLVED", "FAILED", "EXPIRED"})


@dataclass(frozen=True)
class TaskView:
    """GET /tasks/{task_id}. Times are epoch seconds; None where the stack does not know them."""

    task_id: str
    status: str
    solution: str | None = field(repr=False)
    error: str | None
    delivered_via: str | None
    submitted_at: float | None
    finished_at_earliest: float | None
    finished_at_latest: float | None
    usable_until: float | None
    usable: bool | None
    token_age_seconds: float | None
    poll_attempts: int
    reported: str | None
    next_check_at: float | None = None
    """PENDING only: when the stack next checks res.php itself (epoch seconds, its clock)."""
    retry_after: float | None = None
    """PENDING only: seconds until a look is worthwhile (the stack's next check)."""
    kind: str | None = None
    answer: dict[str, Any] | None = field(default=None, repr=False)
    """The answer parsed for its kind (GeeTest fields, grid cells, coordinates, text...)."""
    answer_fits: bool | None = None
    """False: the answer is not shaped as its kind's usually are (still the provider's answer)."""

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> TaskView:
        return cls(
            task_id=str(document["task_id"]),
            status=str(document["status"]),
            solution=_optional_str(document.get("solution")),
            error=_optional_str(document.get("error")),
            delivered_via=_optional_str(document.get("delivered_via")),
            submitted_at=_optional_float(document.get("submitted_at")),
            # A stack without these keys knows only when it received the token.
            finished_at_earliest=_optional_float(
                document.get("finished_at_earliest", document.get("submitted_at"))
            ),
            finished_at_latest=_optional_float(
                document.get("finished_at_latest", document.get("received_at"))
            ),
            usable_until=_optional_float(document.get("usable_until")),
            usable=_optional_bool(document.get("usable")),
            token_age_seconds=_optional_float(document.get("token_age_seconds")),
            poll_attempts=int(document.get("poll_attempts") or 0),
            reported=_optional_str(document.get("reported")),
            next_check_at=_optional_float(document.get("next_check_at")),
            retry_after=_optional_float(document.get("retry_after")),
            kind=_optional_str(document.get("kind")),
            answer=_optional_dict(document.get("answer")),
            answer_fits=_optional_bool(document.get("answer_fits")),
        )


@dataclass(frozen=True)
class Solution:
    """A solved task's token with honest age bounds. The token never appears in repr()."""

    task_id: str
    token: str = field(repr=False)
    delivered_via: str | None
    finished_at_earliest: float
    """The earliest moment the provider can have finished: the token's age counts from here."""
    finished_at_latest: float
    usable_until: float | None
    """None when the stack does not say (then only the worker's own knowledge of the kind helps)."""
    kind: str | None = None
    answer: dict[str, Any] | None = field(default=None, repr=False)
    """The answer parsed for its kind: {"text": ...}, {"type": "grid", "cells": [...]},
    GeeTest's fields, {"cf_clearance": ..., "user_agent": ...}; ``raw`` is the answer as sent."""
    answer_fits: bool | None = None

    @property
    def raw(self) -> str:
        """The provider's answer exactly as it sent it (the same text as ``token``)."""
        return self.token

    @property
    def age(self) -> float:
        """Seconds since the provider finished at the earliest (pessimistic)."""
        return self.age_at(time.time())

    def age_at(self, now: float) -> float:
        return max(0.0, now - self.finished_at_earliest)

    def usable_at(self, now: float) -> bool:
        return self.usable_until is None or now < self.usable_until

    @classmethod
    def from_view(cls, view: TaskView) -> Solution:
        if view.status != SOLVED or view.solution is None:
            raise ValueError(f"task {view.task_id} is {view.status}, not solved")
        latest = view.finished_at_latest or time.time()
        return cls(
            task_id=view.task_id,
            token=view.solution,
            delivered_via=view.delivered_via,
            finished_at_earliest=view.finished_at_earliest or latest,
            finished_at_latest=latest,
            usable_until=view.usable_until,
            kind=view.kind,
            answer=view.answer,
            answer_fits=view.answer_fits,
        )


@dataclass(frozen=True)
class PingbackUrl:
    """A per-task pingback URL for a task the worker submits to the provider itself."""

    url: str = field(repr=False)
    expires_at: float | None


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, dict) else None


def _optional_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)
