"""When a waiting worker should look again: the hint POST /tasks and a PENDING GET carry.

A worker that follows it asks when the stack has, or is about to have, something new; one that
asks more often still gets a correct answer, it only pays for more requests.
"""

from __future__ import annotations

import math
from typing import Any

from pingback_guard.domain.task import TaskStatus

# The shortest pause a PENDING answer asks for: a GET sooner than this can learn nothing new.
MIN_RETRY_AFTER_SECONDS = 1.0


def paced(view: dict[str, Any], next_check_at: float, now: float) -> dict[str, Any]:
    """A PENDING view with when to look next: ``next_check_at`` (epoch seconds) and
    ``retry_after`` (whole seconds from now, as the Retry-After header says it)."""
    if view.get("status") != TaskStatus.PENDING.value:
        return view
    wait = max(MIN_RETRY_AFTER_SECONDS, next_check_at - now)
    return {**view, "next_check_at": round(next_check_at, 3), "retry_after": math.ceil(wait)}
