"""A task's outcome: the first solution wins, a failure only where no solution is; a pingback's
write also requires its proof (the capability's nonce) to fit the stored task."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pingback_guard.data.capabilities import PingbackUrls
from pingback_guard.data.dynamodb_table import ConditionRefused, ItemTable, values
from pingback_guard.data.task_items import task_from_item
from pingback_guard.domain.task import RecordedSolution, StoreOutcome, TaskResult, TaskStatus


class ResultRecords:
    def __init__(self, table: ItemTable, pingback_urls: PingbackUrls) -> None:
        self._table = table
        self._pingback_urls = pingback_urls

    def record_result(self, result: TaskResult) -> StoreOutcome:
        return self.record_solution(result).outcome

    def record_solution(self, result: TaskResult) -> RecordedSolution:
        """A task the table does not know yet (no token_lifetime_seconds) gets the shortest
        lifetime: its usable_until may be early, never late. The solver's user agent, when the
        provider sent one beside the token, is kept with it (the token is bound to it)."""
        user_agent = {"user_agent": result.user_agent} if result.user_agent else {}
        return self._store_pingback_aware(
            result,
            "SET solution = :code, #status = :solved, received_at = :received,"
            " delivered_via = :via, expires_at = :ttl, finished_after = :finished,"
            " usable_until = if_not_exists(token_lifetime_seconds, :lifetime) + :finished"
            + (", solver_user_agent = :user_agent" if user_agent else "")
            + "{nonce} REMOVE due_shard, due_at, #error{decided}",
            condition="attribute_not_exists(solution)",
            names={"#status": "status", "#error": "error"},
            written={
                "code": result.code,
                "solved": TaskStatus.SOLVED.value,
                "received": result.received_at,
                "via": result.delivered_via.value,
                "finished": result.finished_at_earliest,
                "lifetime": self._table.settings.token_lifetimes.shortest,
                **user_agent,
            },
            same=lambda old: old.get("solution") == result.code,
        )

    def record_failure(self, result: TaskResult) -> StoreOutcome:
        return self._store_pingback_aware(
            result,
            "SET #status = :failed, #error = :code, received_at = :received,"
            " delivered_via = :via, expires_at = :ttl{nonce} REMOVE due_shard, due_at{decided}",
            condition="attribute_not_exists(solution) AND (attribute_not_exists(#status)"
            " OR #status IN (:pending, :expired))",
            names={"#status": "status", "#error": "error"},
            written={
                "failed": TaskStatus.FAILED.value,
                "code": result.code,
                "received": result.received_at,
                "via": result.delivered_via.value,
            },
            condition_values={
                "pending": TaskStatus.PENDING.value,
                "expired": TaskStatus.EXPIRED.value,
            },
            same=lambda old: (
                old.get("status") == TaskStatus.FAILED.value and old.get("error") == result.code
            ),
        ).outcome

    def _store_pingback_aware(
        self,
        result: TaskResult,
        expression: str,
        *,
        condition: str,
        names: dict[str, str],
        written: dict[str, object],
        same: Callable[[Mapping[str, Any]], bool],
        condition_values: Mapping[str, object] | None = None,
    ) -> RecordedSolution:
        """One conditional write; a pingback's also requires its proof to fit the stored task.

        A capability's nonce decides only the task recorded with that nonce, or a contested
        registration one of whose claims it is (that claim's owner then owns the task, the other
        claims are dropped); a dead letter from before per-task URLs (nonce None) only a task
        recorded without one. A pingback with a nonce for an id nobody registered yet is kept
        provisionally (one id per capability, one retention window).
        """
        proof, proof_names, proof_values = _proof_condition(result)
        decides = result.needs_pingback_proof and result.nonce is not None
        ttl = self._table.expiry(result.received_at)
        try:
            stored = self._table.update(
                result.task_id,
                expression.format(
                    nonce=", nonce = :nonce, #owner = if_not_exists(rivals.#rival, #owner)"
                    if decides
                    else "",
                    decided=", rivals" if decides else "",
                ),
                condition=f"{condition}{proof}",
                names=names | proof_names | ({"#owner": "owner"} if decides else {}),
                values=values(**written, **(condition_values or {}), **proof_values, ttl=ttl),
                return_new=True,
            )
        except ConditionRefused as refused:
            old = refused.old_item
            if old is None and result.needs_pingback_proof and result.nonce is not None:
                return self._store_unregistered(result, expression, names, written, same)
            return RecordedSolution(_judge(result, old, same))
        return RecordedSolution(StoreOutcome.STORED, task_from_item(stored))

    def _store_unregistered(
        self,
        result: TaskResult,
        expression: str,
        names: dict[str, str],
        written: dict[str, object],
        same: Callable[[Mapping[str, Any]], bool],
    ) -> RecordedSolution:
        ttl = int(result.received_at) + self._table.settings.provisional_ttl_seconds
        if result.nonce is None or not self._pingback_urls.claim_provisional_slot(
            result.nonce, result.task_id, ttl
        ):
            return RecordedSolution(StoreOutcome.REJECTED)
        try:
            stored = self._table.update(
                result.task_id,
                expression.format(nonce=", nonce = :nonce", decided=""),
                condition="attribute_not_exists(#status)",
                names={**names, "#status": "status"},
                values=values(**written, nonce=result.nonce, ttl=ttl),
                return_new=True,
            )
        except ConditionRefused as refused:
            return RecordedSolution(_judge(result, refused.old_item, same))
        return RecordedSolution(StoreOutcome.STORED_UNREGISTERED, task_from_item(stored))


def _proof_condition(result: TaskResult) -> tuple[str, dict[str, str], dict[str, object]]:
    if not result.needs_pingback_proof:
        return "", {}, {}
    if result.nonce is not None:
        return (
            " AND (nonce = :nonce OR attribute_exists(rivals.#rival))",
            {"#rival": result.nonce},
            {"nonce": result.nonce},
        )
    return " AND attribute_exists(submitted_at) AND attribute_not_exists(nonce)", {}, {}


def _proof_fits(result: TaskResult, old: Mapping[str, Any]) -> bool:
    if not result.needs_pingback_proof:
        return True
    if result.nonce is not None:
        return old.get("nonce") == result.nonce or result.nonce in (old.get("rivals") or {})
    return "nonce" not in old and "submitted_at" in old


def _judge(
    result: TaskResult,
    old: Mapping[str, Any] | None,
    same: Callable[[Mapping[str, Any]], bool],
) -> StoreOutcome:
    """What a refused write means, from the item as it was."""
    if old is None:
        # No item and a legacy proof: nothing to decide. (Trusted writes cannot be refused so.)
        return StoreOutcome.REJECTED if result.needs_pingback_proof else StoreOutcome.CONFLICT
    if not _proof_fits(result, old):
        return StoreOutcome.REJECTED
    return StoreOutcome.DUPLICATE if same(old) else StoreOutcome.CONFLICT
