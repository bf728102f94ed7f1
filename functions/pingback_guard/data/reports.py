"""A solved task's one report to the provider (reportgood / reportbad): claimed as a lease,
then confirmed or released. Kept on the task's item."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pingback_guard.data.dynamodb_table import (
    ConditionRefused,
    ItemTable,
    float_or_none,
    values,
)
from pingback_guard.domain.task import ReportAttempt, ReportClaim, TaskOrigin

# The caller's task, or one recorded before owners existed (logic/access.py's rule).
OWNED_BY_CALLER = (
    "(#owner = :owner OR (attribute_not_exists(#owner) AND attribute_not_exists(nonce)"
    " AND attribute_exists(submitted_at)))"
)


class ReportRecords:
    def __init__(self, table: ItemTable) -> None:
        self._table = table

    def claim_report(self, attempt: ReportAttempt) -> ReportClaim:
        """One conditional write decides; a refusal is judged from the old item, no read."""
        owner = attempt.owner
        ownership = "" if owner is None else f" AND {OWNED_BY_CALLER}"
        try:
            self._table.update(
                attempt.task_id,
                "SET reported = :verdict, reported_at = :now, report_lease_until = :lease",
                condition="attribute_exists(solution)"
                " AND (attribute_not_exists(reported) OR report_lease_until < :now)"
                " AND (finished_after >= :window_start"
                f" OR (attribute_not_exists(finished_after) AND received_at >= :window_start))"
                # A smoke task's id was never the provider's: nothing to report.
                f" AND (attribute_not_exists(#origin) OR #origin <> :smoke){ownership}",
                names={"#origin": "origin"} | ({"#owner": "owner"} if owner is not None else {}),
                values=values(
                    smoke=TaskOrigin.SMOKE.value,
                    verdict=attempt.verdict.value,
                    now=attempt.now,
                    lease=attempt.lease_until,
                    window_start=attempt.window_start,
                    **({} if owner is None else {"owner": owner}),
                ),
            )
        except ConditionRefused as refused:
            return _refused_report(refused.old_item, attempt.now, owner)
        return ReportClaim.CLAIMED

    def confirm_report(self, task_id: str, claimed_at: float) -> bool:
        return self._settle_report(task_id, claimed_at, "REMOVE report_lease_until")

    def release_report(self, task_id: str, claimed_at: float) -> bool:
        return self._settle_report(
            task_id, claimed_at, "REMOVE reported, reported_at, report_lease_until"
        )

    def _settle_report(self, task_id: str, claimed_at: float, expression: str) -> bool:
        try:
            self._table.update(
                task_id,
                expression,
                condition="reported_at = :claimed AND attribute_exists(report_lease_until)",
                names={},
                values=values(claimed=claimed_at),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True


def _owned_by(item: Mapping[str, Any], owner: str) -> bool:
    """OWNED_BY_CALLER, judged on an item DynamoDB handed back."""
    if "owner" in item:
        return bool(item["owner"] == owner)
    return "nonce" not in item and "submitted_at" in item


def _refused_report(old: Mapping[str, Any] | None, now: float, owner: str | None) -> ReportClaim:
    if not old or (owner is not None and not _owned_by(old, owner)):
        return ReportClaim.UNKNOWN_TASK
    if old.get("origin") == TaskOrigin.SMOKE.value:
        return ReportClaim.UNKNOWN_TASK
    if "solution" not in old:
        return ReportClaim.NOT_SOLVED
    lease = float_or_none(old.get("report_lease_until"))
    if "reported" in old and (lease is None or lease >= now):
        return ReportClaim.ALREADY_REPORTED
    return ReportClaim.WINDOW_CLOSED
