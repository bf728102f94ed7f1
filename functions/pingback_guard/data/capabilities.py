"""Pingback URLs (capabilities): who one was issued to, which id it registered, and which id
its one provisional result is kept under. One item per URL, beside the tasks."""

from __future__ import annotations

from pingback_guard.data.dynamodb_table import (
    NON_TASK_KEY_PREFIX,
    ConditionRefused,
    ItemTable,
    values,
)
from pingback_guard.domain.task import IssuedPingbackUrl, PingbackUrlClaim

PINGBACK_URL_KEY_PREFIX = NON_TASK_KEY_PREFIX + "pingback-url#"


class PingbackUrls:
    def __init__(self, table: ItemTable) -> None:
        self._table = table

    def record_pingback_url(self, issued: IssuedPingbackUrl) -> None:
        self._table.update(
            PINGBACK_URL_KEY_PREFIX + issued.nonce,
            "SET #owner = :owner, issued_at = :issued, register_by = :register_by,"
            " expires_at = :ttl",
            condition="attribute_not_exists(#owner)",
            names={"#owner": "owner"},
            values=values(
                owner=issued.owner,
                issued=issued.issued_at,
                register_by=issued.register_by,
                ttl=int(issued.expires_at),
            ),
            return_old=False,
        )

    def claim_pingback_url(
        self, nonce: str, owner: str, task_id: str, now: float
    ) -> PingbackUrlClaim:
        try:
            self._table.update(
                PINGBACK_URL_KEY_PREFIX + nonce,
                "SET registered_task = :task_id",
                condition="#owner = :owner AND register_by >= :now"
                " AND (attribute_not_exists(registered_task) OR registered_task = :task_id)",
                names={"#owner": "owner"},
                values=values(owner=owner, now=now, task_id=task_id),
                return_old=False,
            )
        except ConditionRefused:
            return PingbackUrlClaim.REFUSED
        return PingbackUrlClaim.CLAIMED

    def claim_provisional_slot(self, nonce: str, task_id: str, ttl: int) -> bool:
        """A capability keeps a provisional result under one id only (its pingback URL's item),
        and none under another id than the one it registered."""
        try:
            self._table.update(
                PINGBACK_URL_KEY_PREFIX + nonce,
                "SET provisional_task = :task_id, expires_at = if_not_exists(expires_at, :ttl)",
                condition="(attribute_not_exists(provisional_task) OR provisional_task = :task_id)"
                " AND (attribute_not_exists(registered_task) OR registered_task = :task_id)",
                names={},
                values=values(task_id=task_id, ttl=ttl),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True
