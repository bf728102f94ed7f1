"""The poller's lease: one item that says who sweeps until when, who waits to take over when
that one stops (``successor``, until ``successor_until``), and keeps what the poller learned
(solve-time samples, when it last had a task to check) between invocations."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from pingback_guard.data.dynamodb_table import (
    NON_TASK_KEY_PREFIX,
    ConditionRefused,
    ItemTable,
    float_or_none,
    item_to_python,
    values,
)
from pingback_guard.domain.lease import PollerLease

POLLER_LEASE_KEY = NON_TASK_KEY_PREFIX + "poller-lease"


class PollerLeases:
    def __init__(self, table: ItemTable) -> None:
        self._table = table

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        try:
            answer = self._table.call(
                "UpdateItem",
                self._table.client.update_item,
                TableName=self._table.name,
                Key={"task_id": {"S": POLLER_LEASE_KEY}},
                # A new holder ends any claim to succeed the last one: its claimant asks again.
                UpdateExpression=(
                    "SET holder = :holder, lease_until = :until REMOVE successor, successor_until"
                ),
                ConditionExpression="attribute_not_exists(lease_until) OR lease_until <= :now",
                ExpressionAttributeValues=values(holder=holder, until=until, now=now),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionRefused as refused:
            held = float_or_none((refused.old_item or {}).get("lease_until"))
            return PollerLease(acquired=False, held_until=held if held is not None else until)
        item = item_to_python(answer.get("Attributes", {}))
        return PollerLease(
            True,
            until,
            _solve_samples(item.get("solve_samples")),
            float_or_none(item.get("busy_at")),
        )

    def claim_poller_succession(self, holder: str, now: float, until: float) -> bool:
        try:
            self._update(
                "SET successor = :holder, successor_until = :until",
                "attribute_not_exists(successor_until) OR successor_until <= :now"
                " OR successor = :holder",
                {"holder": holder, "until": until, "now": now},
            )
        except ConditionRefused:
            return False
        return True

    def mark_poller_busy(self, holder: str, busy_at: float) -> None:
        self._update_if_holder(holder, "SET busy_at = :busy", {"busy": busy_at})

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        kept: dict[str, object] = {"now": now, "samples": solve_samples}
        update = "SET lease_until = :now, solve_samples = :samples"
        if busy_at is not None:
            kept["busy"] = busy_at
            update += ", busy_at = :busy"
        self._update_if_holder(holder, update, kept)

    def _update_if_holder(self, holder: str, update: str, kept: dict[str, object]) -> None:
        """Only while ``holder`` still holds the lease: a lease taken over is not written."""
        try:
            self._update(update, "holder = :holder", {"holder": holder, **kept})
        except ConditionRefused:
            return

    def _update(self, update: str, condition: str, named: dict[str, object]) -> None:
        self._table.update(
            POLLER_LEASE_KEY,
            update,
            condition=condition,
            names={},
            values=values(**named),
            return_old=False,
        )


def _solve_samples(raw: object) -> dict[str, list[float]]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(method): [float(value) for value in samples if isinstance(value, Decimal | int)]
        for method, samples in raw.items()
        if isinstance(samples, list)
    }
