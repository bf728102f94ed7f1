"""A task's record: this stack's submits, workers' registrations and the smoke check's
synthetic tasks, written PENDING with the due index's keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pingback_guard.data.due_index import due_shard_of
from pingback_guard.data.dynamodb_table import ConditionRefused, ItemTable, text_or_none, values
from pingback_guard.data.task_items import RESULT_ATTRIBUTES, task_from_item
from pingback_guard.domain.task import (
    NewTask,
    RegistrationOutcome,
    SubmissionOutcome,
    Task,
    TaskOrigin,
    TaskStatus,
)
from pingback_guard.kinds.registry import lifetime_seconds

# What this stack's own submit replaces when it gets the same id from the provider.
REPLACEABLE_ORIGINS = (TaskOrigin.REGISTER.value, TaskOrigin.SMOKE.value)
# A task's pingback_forward: whether its result goes to a worker's own pingback URL.
PINGBACK_FORWARD = "yes"
NO_FORWARD = "no"


class TaskRecords:
    def __init__(self, table: ItemTable) -> None:
        self._table = table

    def get(self, task_id: str) -> Task | None:
        item = self._table.get_item(task_id)
        return task_from_item(item) if item else None

    def provider_accounts_of(self, task_ids: Sequence[str]) -> dict[str, str | None]:
        """Each task's provider account (None: account 1, or a task no longer there)."""
        accounts: dict[str, str | None] = dict.fromkeys(task_ids)
        for item in self._table.batch_get(task_ids, "task_id, provider_account"):
            accounts[str(item["task_id"])] = text_or_none(item.get("provider_account"))
        return accounts

    def record_submission(self, task: NewTask) -> SubmissionOutcome:
        """This stack's own submit: it made the URL the provider holds, so its record replaces a
        provisional result of another nonce and any worker's registration of the id."""
        described, old = self._first_write(task)
        if old is None:
            return SubmissionOutcome.CREATED
        if "submitted_at" not in old:
            return self._take_over_provisional(task, described, old)
        if old.get("origin") in REPLACEABLE_ORIGINS:
            return self._replace_registration(task, described)
        return SubmissionOutcome.ALREADY_REGISTERED

    def _first_write(self, task: NewTask) -> tuple[dict[str, object], Mapping[str, Any] | None]:
        """The PENDING item when the id is new; else the item as it was (nothing written)."""
        described = {**task.request.to_document(), "submitted_at": task.submitted_at}
        try:
            self._write_pending(task, described, condition="attribute_not_exists(#status)")
        except ConditionRefused as refused:
            return described, refused.old_item or {}
        return described, None

    def _take_over_provisional(
        self, task: NewTask, described: Mapping[str, object], old: Mapping[str, Any]
    ) -> SubmissionOutcome:
        if task.nonce is not None and old.get("nonce") == task.nonce:
            self._describe_finished_task(task, described)
            return SubmissionOutcome.RESULT_ALREADY_STORED
        return self._discard_provisional(task, described)

    def _replace_registration(
        self, task: NewTask, described: Mapping[str, object]
    ) -> SubmissionOutcome:
        try:
            self._write_pending(
                task,
                described,
                condition="#origin IN ("
                + ", ".join(f":origin{n}" for n in range(len(REPLACEABLE_ORIGINS)))
                + ")",
                condition_values={
                    f"origin{n}": origin for n, origin in enumerate(REPLACEABLE_ORIGINS)
                },
                remove=f" REMOVE {RESULT_ATTRIBUTES}",
            )
        except ConditionRefused:
            return SubmissionOutcome.ALREADY_REGISTERED
        return SubmissionOutcome.REGISTRATION_REPLACED

    def record_registration(self, task: NewTask) -> RegistrationOutcome:
        """A worker's claim on an id it submitted elsewhere; never replaces a submit's task."""
        described, old = self._first_write(task)
        if old is None:
            return RegistrationOutcome.CREATED
        if "submitted_at" not in old:
            outcome = self._take_over_provisional(task, described, old)
            if outcome is SubmissionOutcome.PROVISIONAL_DISCARDED:
                return RegistrationOutcome.PROVISIONAL_DISCARDED
            return RegistrationOutcome.CREATED
        return self._claim_registered_id(task, old)

    def _claim_registered_id(self, task: NewTask, old: Mapping[str, Any]) -> RegistrationOutcome:
        rivals = old.get("rivals") or {}
        if old.get("nonce") == task.nonce or rivals.get(task.nonce) == task.owner:
            same = task_from_item(old).request == task.request and task.owner in {
                old.get("owner"),
                rivals.get(task.nonce),
            }
            return RegistrationOutcome.SAME_AGAIN if same else RegistrationOutcome.DIFFERENT_DATA
        if old.get("origin") != TaskOrigin.REGISTER.value:
            return RegistrationOutcome.HELD_ELSEWHERE
        return self._add_rival(task, has_rivals=bool(rivals))

    def _add_rival(self, task: NewTask, *, has_rivals: bool) -> RegistrationOutcome:
        """Two claims on one PENDING registration: the poller leaves it (no due keys), and the
        pingback that carries one of the claims' nonces decides the owner."""
        if task.nonce is None or task.owner is None:
            return RegistrationOutcome.HELD_ELSEWHERE
        for first_rival in (not has_rivals, has_rivals):
            target = "rivals = :rivals" if first_rival else "rivals.#rival = :owner"
            exists = "attribute_not_exists" if first_rival else "attribute_exists"
            try:
                self._table.update(
                    task.task_id,
                    f"SET {target} REMOVE due_shard, due_at",
                    condition=f"#origin = :register AND #status = :pending AND {exists}(rivals)",
                    names={"#origin": "origin", "#status": "status"}
                    | ({} if first_rival else {"#rival": task.nonce}),
                    values=values(
                        register=TaskOrigin.REGISTER.value,
                        pending=TaskStatus.PENDING.value,
                        **(
                            {"rivals": {task.nonce: task.owner}}
                            if first_rival
                            else {"owner": task.owner}
                        ),
                    ),
                    return_old=False,
                )
            except ConditionRefused:
                continue
            return RegistrationOutcome.CONTESTED
        return RegistrationOutcome.HELD_ELSEWHERE

    def record_smoke_task(self, task: NewTask) -> bool:
        described = {**task.request.to_document(), "submitted_at": task.submitted_at}
        try:
            self._write_pending(
                task,
                described,
                condition="attribute_not_exists(task_id)",
                due=False,
                expires_at=int(task.submitted_at) + self._table.settings.provisional_ttl_seconds,
            )
        except ConditionRefused:
            return False
        return True

    def delete_smoke_task(self, task_id: str, owner: str) -> bool:
        try:
            self._table.call(
                "DeleteItem",
                self._table.client.delete_item,
                TableName=self._table.name,
                Key={"task_id": {"S": task_id}},
                ConditionExpression="#origin = :smoke AND #owner = :owner",
                ExpressionAttributeNames={"#origin": "origin", "#owner": "owner"},
                ExpressionAttributeValues=values(smoke=TaskOrigin.SMOKE.value, owner=owner),
            )
        except ConditionRefused:
            return False
        return True

    def _write_pending(
        self,
        task: NewTask,
        described: Mapping[str, object],
        *,
        condition: str,
        condition_values: Mapping[str, object] | None = None,
        remove: str = "",
        due: bool = True,
        expires_at: int | None = None,
    ) -> None:
        """``due``: with the due index's keys (the poller looks for it); ``expires_at``: the TTL,
        by default the result's."""
        identity, identity_values = _identity(task)
        due_keys, due_values = "", {}
        if due:
            due_keys = " due_shard = :shard, due_at = :due,"
            shard = due_shard_of(task.task_id, self._table.settings.due_shards)
            due_values = {"shard": shard, "due": task.first_poll_at}
        names = {
            "#method": "method",
            "#fields": "fields",
            "#status": "status",
            **_identity_names(task),
        }
        if "#error" in remove:
            names["#error"] = "error"
        self._table.update(
            task.task_id,
            "SET #method = :method, #fields = :fields,"
            f" submitted_at = :submitted_at, #status = :pending,{due_keys}"
            " poll_attempts = :zero, expires_at = :ttl,"
            f" token_lifetime_seconds = :lifetime{identity}{remove}",
            condition=condition,
            names=names,
            values=values(
                **described,
                **identity_values,
                **(condition_values or {}),
                **due_values,
                pending=TaskStatus.PENDING.value,
                zero=0,
                ttl=self._table.expiry(task.submitted_at) if expires_at is None else expires_at,
                lifetime=self._lifetime_of(task.request.method),
            ),
        )

    def _lifetime_of(self, method: str) -> float:
        """An answer without a lifetime of its own (image text) stays usable while it is kept;
        the API shows its usable_until as null (logic.get_task)."""
        settings = self._table.settings
        lifetime = lifetime_seconds(settings.token_lifetimes, method)
        return settings.result_ttl_seconds if lifetime is None else lifetime

    def _discard_provisional(
        self, task: NewTask, described: Mapping[str, object]
    ) -> SubmissionOutcome:
        """A result no registered task proved (another nonce, or none) gives way to PENDING."""
        stale_nonce = "" if task.nonce is not None else ", nonce"
        try:
            self._write_pending(
                task,
                described,
                condition="attribute_not_exists(submitted_at)",
                remove=f" REMOVE {RESULT_ATTRIBUTES}{stale_nonce}",
            )
        except ConditionRefused:
            return SubmissionOutcome.ALREADY_REGISTERED
        return SubmissionOutcome.PROVISIONAL_DISCARDED

    def _describe_finished_task(self, task: NewTask, described: Mapping[str, object]) -> None:
        """A pingback with this task's nonce beat the submitter: add what was asked, keep it."""
        identity, identity_values = _identity(task)
        try:
            self._table.update(
                task.task_id,
                "SET #method = :method, #fields = :fields,"
                f" submitted_at = :submitted_at, expires_at = :ttl{identity}",
                condition="nonce = :nonce AND attribute_not_exists(submitted_at)",
                names={"#method": "method", "#fields": "fields", **_identity_names(task)},
                values=values(
                    **described, **identity_values, ttl=self._table.expiry(task.submitted_at)
                ),
            )
        except ConditionRefused:
            return


def _identity(task: NewTask) -> tuple[str, dict[str, object]]:
    """The SET clause and values of a task's origin and whether its result is forwarded, and its
    nonce, owner, forward URL and provider account (none: account 1) when it has them.
    `pingback_forward` goes into the result event (the URL never does): the forward rule skips
    "no"; a task written before it existed has none and is still offered to the forwarder."""
    clause = ", #origin = :origin, pingback_forward = :pingback_forward"
    identity: dict[str, object] = {
        "origin": task.origin.value,
        "pingback_forward": PINGBACK_FORWARD if task.forward_url is not None else NO_FORWARD,
    }
    if task.nonce is not None:
        clause += ", nonce = :nonce"
        identity["nonce"] = task.nonce
    if task.owner is not None:
        clause += ", #owner = :owner"
        identity["owner"] = task.owner
    if task.forward_url is not None:
        clause += ", forward_url = :forward_url"
        identity["forward_url"] = task.forward_url
    if task.provider_account is not None:
        clause += ", provider_account = :provider_account"
        identity["provider_account"] = task.provider_account
    return clause, identity


def _identity_names(task: NewTask) -> dict[str, str]:
    names = {"#origin": "origin"}
    if task.owner is not None:
        names["#owner"] = "owner"  # OWNER is a reserved word
    return names
