"""What a task's item holds, shared by the modules that write parts of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pingback_guard.data.dynamodb_table import float_or_none, text_or_none
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    ReportVerdict,
    Task,
    TaskOrigin,
    TaskStatus,
)

# What a result write sets and a replaced registration or discarded provisional result loses.
RESULT_ATTRIBUTES = (
    "solution, #error, received_at, delivered_via, finished_after, usable_until, reported,"
    " reported_at, report_lease_until, read_through_at, last_checked_at, rivals"
)


def task_from_item(item: Mapping[str, Any]) -> Task:
    has_request = "method" in item
    via = item.get("delivered_via")
    return Task(
        task_id=str(item["task_id"]),
        status=TaskStatus(item["status"]),
        request=CaptchaRequest.from_document(item) if has_request else None,
        submitted_at=float_or_none(item.get("submitted_at")),
        received_at=float_or_none(item.get("received_at")),
        solution=item.get("solution"),
        delivered_via=DeliveryPath(via) if via else None,
        error=item.get("error"),
        poll_attempts=int(item.get("poll_attempts", 0)),
        due_at=float_or_none(item.get("due_at")),
        owner=text_or_none(item.get("owner")),
        nonce=text_or_none(item.get("nonce")),
        finished_after=float_or_none(item.get("finished_after")),
        usable_until=float_or_none(item.get("usable_until")),
        last_checked_at=float_or_none(item.get("last_checked_at")),
        read_through_at=float_or_none(item.get("read_through_at")),
        reported=ReportVerdict(item["reported"]) if item.get("reported") else None,
        reported_at=float_or_none(item.get("reported_at")),
        origin=TaskOrigin(item["origin"]) if item.get("origin") in set(TaskOrigin) else None,
        rivals={str(nonce): str(owner) for nonce, owner in dict(item.get("rivals") or {}).items()},
        forward_url=text_or_none(item.get("forward_url")),
        user_agent=text_or_none(item.get("solver_user_agent")),
        provider_account=text_or_none(item.get("provider_account")),
    )
