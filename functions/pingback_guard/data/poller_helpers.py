"""The poller's helper leases: one item per helper group of due shards (``#poller-lease#<g>``),
saying which invocation sweeps that group until when and how loaded its last sweep was.

The main lease holder reads them all in one BatchGetItem each sweep (eventually consistent: a
second's staleness moves a group's hand-over by one sweep) to know which shards it leaves to a
helper and how much work the helpers see between them.
"""

from __future__ import annotations

from collections.abc import Iterator

from pingback_guard.data.dynamodb_table import (
    NON_TASK_KEY_PREFIX,
    ConditionRefused,
    ItemTable,
    float_or_none,
    values,
)
from pingback_guard.domain.lease import HelperLoad

HELPER_LEASE_PREFIX = NON_TASK_KEY_PREFIX + "poller-lease#"


def helper_lease_key(group: int) -> str:
    return f"{HELPER_LEASE_PREFIX}{group}"


class PollerHelperLeases:
    def __init__(self, table: ItemTable) -> None:
        self._table = table

    def acquire_helper_lease(self, group: int, holder: str, now: float, until: float) -> bool:
        try:
            self._update(
                group,
                "SET holder = :holder, lease_until = :until, load_seconds = :zero",
                "attribute_not_exists(lease_until) OR lease_until <= :now",
                holder=holder,
                until=until,
                now=now,
                zero=0,
            )
        except ConditionRefused:
            return False
        return True

    def record_helper_load(self, group: int, holder: str, load_seconds: float) -> None:
        self._update_if_holder(group, holder, "SET load_seconds = :load", load=load_seconds)

    def release_helper_lease(self, group: int, holder: str, now: float) -> None:
        self._update_if_holder(
            group, holder, "SET lease_until = :now, load_seconds = :zero", now=now, zero=0
        )

    def live_helpers(self, groups: int, now: float) -> dict[int, HelperLoad]:
        """Groups 1..``groups`` held past ``now``, with their last sweep's load."""
        live: dict[int, HelperLoad] = {}
        for item in self._items(groups):
            until = float_or_none(item.get("lease_until"))
            if until is None or until <= now:
                continue
            group = int(str(item["task_id"]).removeprefix(HELPER_LEASE_PREFIX))
            live[group] = HelperLoad(until, float_or_none(item.get("load_seconds")) or 0.0)
        return live

    def _items(self, groups: int) -> Iterator[dict[str, object]]:
        keys = [helper_lease_key(group) for group in range(1, groups + 1)]
        return self._table.batch_get(keys, "task_id, lease_until, load_seconds")

    def _update_if_holder(self, group: int, holder: str, update: str, **kept: object) -> None:
        try:
            self._update(group, update, "holder = :holder", holder=holder, **kept)
        except ConditionRefused:
            return  # taken over: nothing of ours to write

    def _update(self, group: int, update: str, condition: str, **named: object) -> None:
        self._table.update(
            helper_lease_key(group),
            update,
            condition=condition,
            names={},
            values=values(**named),
            return_old=False,
        )
