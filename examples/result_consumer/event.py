"""The detail of a `Task Result` event, as the pipe's input template writes it (docs/events.md).

Every value arrives as a string; numbers are decimal strings as DynamoDB keeps them and "" means
the task's item does not have that attribute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FINAL_STATUSES = frozenset({"SOLVED", "FAILED", "EXPIRED"})
_TASK_ID = re.compile(r"[0-9]{1,20}")


class InvalidResultEvent(ValueError):
    """The event is not a pingback-guard result this consumer understands."""


@dataclass(frozen=True)
class ResultEvent:
    task_id: str
    status: str
    previous_status: str | None
    delivered_via: str | None
    finished_at_earliest: float | None
    finished_at_latest: float | None
    usable_until: float | None
    error: str | None
    owner: str | None
    solution: str | None
    """None when the stack publishes without tokens (PublishTokens=false): read GET /tasks/{id}."""

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> ResultEvent:
        detail = event.get("detail")
        if not isinstance(detail, Mapping):
            raise InvalidResultEvent("the event has no detail object")
        task_id = _text(detail, "task_id")
        status = _text(detail, "status")
        if task_id is None or not _TASK_ID.fullmatch(task_id):
            raise InvalidResultEvent("task_id must be 1 to 20 digits")
        if status not in FINAL_STATUSES:
            raise InvalidResultEvent("status must be SOLVED, FAILED or EXPIRED")
        latest = _number(detail, "finished_at_latest")
        return cls(
            task_id=task_id,
            status=status,
            previous_status=_text(detail, "previous_status"),
            delivered_via=_text(detail, "delivered_via"),
            # No finished_after on the item means "same as the latest moment" (the contract).
            finished_at_earliest=_number(detail, "finished_at_earliest") or latest,
            finished_at_latest=latest,
            usable_until=_number(detail, "usable_until"),
            error=_text(detail, "error"),
            owner=_text(detail, "owner"),
            solution=_text(detail, "solution"),
        )

    def usable_at(self, moment: float) -> bool:
        return self.solution is not None and (
            self.usable_until is None or moment < self.usable_until
        )


def _text(detail: Mapping[str, Any], key: str) -> str | None:
    value = detail.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidResultEvent(f"{key} must be a string")
    return value


def _number(detail: Mapping[str, Any], key: str) -> float | None:
    text = _text(detail, key)
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidResultEvent(f"{key} must be a decimal number") from None
