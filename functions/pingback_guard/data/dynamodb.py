"""The only code that touches DynamoDB.

Every write is a single conditional request, so a first callback costs one write and no read.
A refused condition (duplicate, conflict, lost race) is judged from the old item DynamoDB hands
back with the refusal (ReturnValuesOnConditionCheckFailure=ALL_OLD): no read, no GetItem grant.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import StoreError, StoreUnavailableError
from pingback_guard.domain.lease import PollerLease
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    DueTask,
    IssuedPingbackUrl,
    NewTask,
    PingbackUrlClaim,
    RecordedSolution,
    RegistrationOutcome,
    ReportAttempt,
    ReportClaim,
    ReportVerdict,
    StoreOutcome,
    SubmissionOutcome,
    Task,
    TaskOrigin,
    TaskResult,
    TaskStatus,
)
from pingback_guard.kinds.registry import lifetime_seconds
from pingback_guard.settings import TableSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

CONDITION_FAILED = "ConditionalCheckFailedException"
UNAVAILABLE_ERROR_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionConflictException",
        "LimitExceededException",
    }
)
QUERY_PAGE_SIZE = 500
# The caller's task, or one recorded before owners existed (logic/access.py's rule).
OWNED_BY_CALLER = (
    "(#owner = :owner OR (attribute_not_exists(#owner) AND attribute_not_exists(nonce)"
    " AND attribute_exists(submitted_at)))"
)
# Not tasks: task ids are digits, so keys starting with "#" never collide with one and no route
# reads them. The poller's lease, and one item per pingback URL (who it was issued to, which id
# it registered, which id its one provisional result is kept under).
NON_TASK_KEY_PREFIX = "#"
POLLER_LEASE_KEY = "#poller-lease"
PINGBACK_URL_KEY_PREFIX = "#pingback-url#"
# What this stack's own submit replaces when it gets the same id from the provider.
REPLACEABLE_ORIGINS = (TaskOrigin.REGISTER.value, TaskOrigin.SMOKE.value)
# A task's pingback_forward: whether its result goes to a worker's own pingback URL.
PINGBACK_FORWARD = "yes"
NO_FORWARD = "no"
# What a result write sets and a replaced registration or discarded provisional result loses.
RESULT_ATTRIBUTES = (
    "solution, #error, received_at, delivered_via, finished_after, usable_until, reported,"
    " reported_at, report_lease_until, read_through_at, last_checked_at, rivals"
)

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class ConditionRefused(Exception):
    """Internal: a conditional write was refused; carries the item as it was."""

    def __init__(self, old_item: Mapping[str, Any] | None) -> None:
        super().__init__("condition refused")
        self.old_item = old_item


def due_shard_of(task_id: str, shards: int) -> str:
    """Spread PENDING tasks over ``shards`` index partitions, stable per task."""
    return str(zlib.crc32(task_id.encode()) % shards)


def _values(**values: object) -> dict[str, Any]:
    return {f":{name}": _serializer.serialize(_plain(value)) for name, value in values.items()}


def _plain(value: object) -> object:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _item_to_python(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _deserializer.deserialize(value) for key, value in item.items()}


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, Decimal | int | float) else None


class DynamoDbTaskStore:
    """TaskStore on one DynamoDB table with a sparse, write-sharded due index."""

    def __init__(self, client: DynamoDBClient, settings: TableSettings) -> None:
        self._client = client
        self._settings = settings
        self._shard_rotation = itertools.cycle(range(settings.due_shards))

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
            same = _task_from_item(old).request == task.request and task.owner in {
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
                self._update(
                    task.task_id,
                    f"SET {target} REMOVE due_shard, due_at",
                    condition=f"#origin = :register AND #status = :pending AND {exists}(rivals)",
                    names={"#origin": "origin", "#status": "status"}
                    | ({} if first_rival else {"#rival": task.nonce}),
                    values=_values(
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
                expires_at=int(task.submitted_at) + self._settings.provisional_ttl_seconds,
            )
        except ConditionRefused:
            return False
        return True

    def delete_smoke_task(self, task_id: str, owner: str) -> bool:
        try:
            self._call(
                "DeleteItem",
                self._client.delete_item,
                TableName=self._settings.table_name,
                Key={"task_id": {"S": task_id}},
                ConditionExpression="#origin = :smoke AND #owner = :owner",
                ExpressionAttributeNames={"#origin": "origin", "#owner": "owner"},
                ExpressionAttributeValues=_values(smoke=TaskOrigin.SMOKE.value, owner=owner),
            )
        except ConditionRefused:
            return False
        return True

    def record_pingback_url(self, issued: IssuedPingbackUrl) -> None:
        self._update(
            PINGBACK_URL_KEY_PREFIX + issued.nonce,
            "SET #owner = :owner, issued_at = :issued, register_by = :register_by,"
            " expires_at = :ttl",
            condition="attribute_not_exists(#owner)",
            names={"#owner": "owner"},
            values=_values(
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
            self._update(
                PINGBACK_URL_KEY_PREFIX + nonce,
                "SET registered_task = :task_id",
                condition="#owner = :owner AND register_by >= :now"
                " AND (attribute_not_exists(registered_task) OR registered_task = :task_id)",
                names={"#owner": "owner"},
                values=_values(owner=owner, now=now, task_id=task_id),
                return_old=False,
            )
        except ConditionRefused:
            return PingbackUrlClaim.REFUSED
        return PingbackUrlClaim.CLAIMED

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
            shard = due_shard_of(task.task_id, self._settings.due_shards)
            due_values = {"shard": shard, "due": task.first_poll_at}
        names = {
            "#method": "method",
            "#fields": "fields",
            "#status": "status",
            **_identity_names(task),
        }
        if "#error" in remove:
            names["#error"] = "error"
        self._update(
            task.task_id,
            "SET #method = :method, #fields = :fields,"
            f" submitted_at = :submitted_at, #status = :pending,{due_keys}"
            " poll_attempts = :zero, expires_at = :ttl,"
            f" token_lifetime_seconds = :lifetime{identity}{remove}",
            condition=condition,
            names=names,
            values=_values(
                **described,
                **identity_values,
                **(condition_values or {}),
                **due_values,
                pending=TaskStatus.PENDING.value,
                zero=0,
                ttl=self._expiry(task.submitted_at) if expires_at is None else expires_at,
                lifetime=self._lifetime_of(task.request.method),
            ),
        )

    def _lifetime_of(self, method: str) -> float:
        """An answer without a lifetime of its own (image text) stays usable while it is kept;
        the API shows its usable_until as null (logic.get_task)."""
        lifetime = lifetime_seconds(self._settings.token_lifetimes, method)
        return self._settings.result_ttl_seconds if lifetime is None else lifetime

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
            self._update(
                task.task_id,
                "SET #method = :method, #fields = :fields,"
                f" submitted_at = :submitted_at, expires_at = :ttl{identity}",
                condition="nonce = :nonce AND attribute_not_exists(submitted_at)",
                names={"#method": "method", "#fields": "fields", **_identity_names(task)},
                values=_values(**described, **identity_values, ttl=self._expiry(task.submitted_at)),
            )
        except ConditionRefused:
            return

    def record_result(self, result: TaskResult) -> StoreOutcome:
        return self.record_solution(result).outcome

    def record_solution(self, result: TaskResult) -> RecordedSolution:
        """A task the table does not know yet (no token_lifetime_seconds) gets the shortest
        lifetime: its usable_until may be early, never late."""
        return self._store_pingback_aware(
            result,
            "SET solution = :code, #status = :solved, received_at = :received,"
            " delivered_via = :via, expires_at = :ttl, finished_after = :finished,"
            " usable_until = if_not_exists(token_lifetime_seconds, :lifetime) + :finished{nonce}"
            " REMOVE due_shard, due_at, #error{decided}",
            condition="attribute_not_exists(solution)",
            names={"#status": "status", "#error": "error"},
            values={
                "code": result.code,
                "solved": TaskStatus.SOLVED.value,
                "received": result.received_at,
                "via": result.delivered_via.value,
                "finished": result.finished_at_earliest,
                "lifetime": self._settings.token_lifetimes.shortest,
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
            values={
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
        values: dict[str, object],
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
        ttl = self._expiry(result.received_at)
        try:
            stored = self._update(
                result.task_id,
                expression.format(
                    nonce=", nonce = :nonce, #owner = if_not_exists(rivals.#rival, #owner)"
                    if decides
                    else "",
                    decided=", rivals" if decides else "",
                ),
                condition=f"{condition}{proof}",
                names=names | proof_names | ({"#owner": "owner"} if decides else {}),
                values=_values(**values, **(condition_values or {}), **proof_values, ttl=ttl),
                return_new=True,
            )
        except ConditionRefused as refused:
            old = refused.old_item
            if old is None and result.needs_pingback_proof and result.nonce is not None:
                return self._store_unregistered(result, expression, names, values, same)
            return RecordedSolution(_judge(result, old, same))
        return RecordedSolution(StoreOutcome.STORED, _task_from_item(stored))

    def _store_unregistered(
        self,
        result: TaskResult,
        expression: str,
        names: dict[str, str],
        values: dict[str, object],
        same: Callable[[Mapping[str, Any]], bool],
    ) -> RecordedSolution:
        ttl = int(result.received_at) + self._settings.provisional_ttl_seconds
        if result.nonce is None or not self._claim_provisional_slot(result, ttl):
            return RecordedSolution(StoreOutcome.REJECTED)
        try:
            stored = self._update(
                result.task_id,
                expression.format(nonce=", nonce = :nonce", decided=""),
                condition="attribute_not_exists(#status)",
                names={**names, "#status": "status"},
                values=_values(**values, nonce=result.nonce, ttl=ttl),
                return_new=True,
            )
        except ConditionRefused as refused:
            return RecordedSolution(_judge(result, refused.old_item, same))
        return RecordedSolution(StoreOutcome.STORED_UNREGISTERED, _task_from_item(stored))

    def _claim_provisional_slot(self, result: TaskResult, ttl: int) -> bool:
        """A capability keeps a provisional result under one id only (its pingback URL's item),
        and none under another id than the one it registered."""
        try:
            self._update(
                PINGBACK_URL_KEY_PREFIX + str(result.nonce),
                "SET provisional_task = :task_id, expires_at = if_not_exists(expires_at, :ttl)",
                condition="(attribute_not_exists(provisional_task) OR provisional_task = :task_id)"
                " AND (attribute_not_exists(registered_task) OR registered_task = :task_id)",
                names={},
                values=_values(task_id=result.task_id, ttl=ttl),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

    def mark_expired(self, task_id: str, now: float) -> bool:
        try:
            self._update(
                task_id,
                "SET #status = :expired, #error = :reason, received_at = :now, expires_at = :ttl"
                " REMOVE due_shard, due_at",
                condition="#status = :pending",
                names={"#status": "status", "#error": "error"},
                values=_values(
                    expired=TaskStatus.EXPIRED.value,
                    reason="EXPIRED_UNRECOVERED",
                    now=now,
                    ttl=self._expiry(now),
                    pending=TaskStatus.PENDING.value,
                ),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

    def reschedule_poll(
        self,
        task_id: str,
        due_at: float,
        poll_attempts: int,
        last_checked_at: float | None = None,
    ) -> bool:
        checked = "" if last_checked_at is None else ", last_checked_at = :checked"
        extra = {} if last_checked_at is None else {"checked": last_checked_at}
        try:
            self._update(
                task_id,
                f"SET due_at = :due, poll_attempts = :attempts{checked}",
                condition="#status = :pending",
                names={"#status": "status"},
                values=_values(
                    due=due_at, attempts=poll_attempts, pending=TaskStatus.PENDING.value, **extra
                ),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

    def next_due_at(self, after: float, until: float) -> float | None:
        earliest: float | None = None
        for shard in range(self._settings.due_shards):
            page = self._call(
                "Query",
                self._client.query,
                TableName=self._settings.table_name,
                IndexName=self._settings.due_index_name,
                KeyConditionExpression="due_shard = :shard AND due_at BETWEEN :after AND :until",
                ProjectionExpression="due_at",
                ExpressionAttributeValues=_values(shard=str(shard), after=after, until=until),
                Limit=1,
            )
            for raw in page.get("Items", []):
                found = float(_item_to_python(raw)["due_at"])
                earliest = found if earliest is None else min(earliest, found)
        return earliest

    def acquire_poller_lease(self, holder: str, now: float, until: float) -> PollerLease:
        try:
            answer = self._call(
                "UpdateItem",
                self._client.update_item,
                TableName=self._settings.table_name,
                Key={"task_id": {"S": POLLER_LEASE_KEY}},
                UpdateExpression="SET holder = :holder, lease_until = :until",
                ConditionExpression="attribute_not_exists(lease_until) OR lease_until <= :now",
                ExpressionAttributeValues=_values(holder=holder, until=until, now=now),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionRefused as refused:
            held = _float_or_none((refused.old_item or {}).get("lease_until"))
            return PollerLease(acquired=False, held_until=held if held is not None else until)
        item = _item_to_python(answer.get("Attributes", {}))
        return PollerLease(
            True,
            until,
            _solve_samples(item.get("solve_samples")),
            _float_or_none(item.get("busy_at")),
        )

    def release_poller_lease(
        self,
        holder: str,
        now: float,
        solve_samples: dict[str, list[float]],
        busy_at: float | None = None,
    ) -> None:
        kept = {"now": now, "samples": solve_samples}
        update = "SET lease_until = :now, solve_samples = :samples"
        if busy_at is not None:
            kept["busy"] = busy_at
            update += ", busy_at = :busy"
        try:
            self._call(
                "UpdateItem",
                self._client.update_item,
                TableName=self._settings.table_name,
                Key={"task_id": {"S": POLLER_LEASE_KEY}},
                UpdateExpression=update,
                ConditionExpression="holder = :holder",
                ExpressionAttributeValues=_values(holder=holder, **kept),
            )
        except ConditionRefused:
            return

    def claim_read_through(self, task_id: str, now: float, interval_seconds: float) -> bool:
        try:
            self._update(
                task_id,
                "SET read_through_at = :now",
                condition="#status = :pending AND (attribute_not_exists(read_through_at)"
                " OR read_through_at <= :cutoff)",
                names={"#status": "status"},
                values=_values(
                    now=now, cutoff=now - interval_seconds, pending=TaskStatus.PENDING.value
                ),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

    def record_not_ready(self, task_id: str, checked_at: float) -> bool:
        try:
            self._update(
                task_id,
                "SET last_checked_at = :at",
                condition="#status = :pending AND (attribute_not_exists(last_checked_at)"
                " OR last_checked_at < :at)",
                names={"#status": "status"},
                values=_values(at=checked_at, pending=TaskStatus.PENDING.value),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

    def claim_report(self, attempt: ReportAttempt) -> ReportClaim:
        """One conditional write decides; a refusal is judged from the old item, no read."""
        owner = attempt.owner
        ownership = "" if owner is None else f" AND {OWNED_BY_CALLER}"
        try:
            self._update(
                attempt.task_id,
                "SET reported = :verdict, reported_at = :now, report_lease_until = :lease",
                condition="attribute_exists(solution)"
                " AND (attribute_not_exists(reported) OR report_lease_until < :now)"
                " AND (finished_after >= :window_start"
                f" OR (attribute_not_exists(finished_after) AND received_at >= :window_start))"
                # A smoke task's id was never the provider's: nothing to report.
                f" AND (attribute_not_exists(#origin) OR #origin <> :smoke){ownership}",
                names={"#origin": "origin"} | ({"#owner": "owner"} if owner is not None else {}),
                values=_values(
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
            self._update(
                task_id,
                expression,
                condition="reported_at = :claimed AND attribute_exists(report_lease_until)",
                names={},
                values=_values(claimed=claimed_at),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

    def get(self, task_id: str) -> Task | None:
        item = self._get_item(task_id)
        return _task_from_item(item) if item else None

    def due_tasks(self, now: float, limit: int) -> list[DueTask]:
        """Query every shard of the sparse index, starting at a rotating shard for fairness."""
        first = next(self._shard_rotation)
        shards = self._settings.due_shards
        found: list[DueTask] = []
        for offset in range(shards):
            if len(found) >= limit:
                break
            shard = str((first + offset) % shards)
            found.extend(self._due_in_shard(shard, now, limit - len(found)))
        return found

    def _due_in_shard(self, shard: str, now: float, limit: int) -> Iterator[DueTask]:
        request: dict[str, Any] = {
            "TableName": self._settings.table_name,
            "IndexName": self._settings.due_index_name,
            "KeyConditionExpression": "due_shard = :shard AND due_at <= :now",
            "ProjectionExpression": "task_id, due_at, submitted_at, poll_attempts,"
            " last_checked_at, #method",
            "ExpressionAttributeNames": {"#method": "method"},
            "ExpressionAttributeValues": _values(shard=shard, now=now),
        }
        remaining = limit
        while remaining > 0:
            page = self._call(
                "Query", self._client.query, **request, Limit=min(remaining, QUERY_PAGE_SIZE)
            )
            for raw in page.get("Items", []):
                remaining -= 1
                yield _due_task_from_item(_item_to_python(raw))
            last_key = page.get("LastEvaluatedKey")
            if not last_key:
                return
            request["ExclusiveStartKey"] = last_key

    def _expiry(self, moment: float) -> int:
        return int(moment) + self._settings.result_ttl_seconds

    def _get_item(self, task_id: str) -> dict[str, Any] | None:
        answer = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self._settings.table_name,
            Key={"task_id": {"S": task_id}},
            ConsistentRead=True,
        )
        item = answer.get("Item")
        return _item_to_python(item) if item else None

    def _update(
        self,
        task_id: str,
        expression: str,
        *,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
        return_old: bool = True,
        return_new: bool = False,
    ) -> dict[str, Any]:
        """The item as written when ``return_new`` (ALL_NEW: no read capacity beyond the
        write's own), else empty."""
        request: dict[str, Any] = {
            "TableName": self._settings.table_name,
            "Key": {"task_id": {"S": task_id}},
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        if names:
            request["ExpressionAttributeNames"] = names
        if return_old:
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if return_new:
            request["ReturnValues"] = "ALL_NEW"
        answer = self._call("UpdateItem", self._client.update_item, **request)
        return _item_to_python(answer.get("Attributes") or {})

    @staticmethod
    def _call(operation: str, send: Callable[..., Any], **request: Any) -> Any:
        return dynamodb_call(operation, send, **request)


def dynamodb_call(operation: str, send: Callable[..., Any], **request: Any) -> Any:
    """Send one request; map boto errors to domain errors and refusals to ConditionRefused."""
    try:
        return send(**request)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == CONDITION_FAILED:
            raw_old: Mapping[str, Any] | None = error.response.get("Item")  # type: ignore[assignment]
            raise ConditionRefused(_item_to_python(raw_old) if raw_old else None) from None
        if code in UNAVAILABLE_ERROR_CODES:
            raise StoreUnavailableError(f"DynamoDB {operation}: {code}") from None
        raise StoreError(f"DynamoDB {operation} failed: {code}") from None
    except BotoCoreError as error:
        raise StoreUnavailableError(f"DynamoDB {operation}: {type(error).__name__}") from None


def _identity(task: NewTask) -> tuple[str, dict[str, object]]:
    """The SET clause and values of a task's origin and whether its result is forwarded, and its
    nonce, owner and forward URL when it has them. `pingback_forward` goes into the result event
    (the URL never does): the forward rule skips "no"; a task written before it existed has none
    and is still offered to the forwarder."""
    clause = ", #origin = :origin, pingback_forward = :pingback_forward"
    values: dict[str, object] = {
        "origin": task.origin.value,
        "pingback_forward": PINGBACK_FORWARD if task.forward_url is not None else NO_FORWARD,
    }
    if task.nonce is not None:
        clause += ", nonce = :nonce"
        values["nonce"] = task.nonce
    if task.owner is not None:
        clause += ", #owner = :owner"
        values["owner"] = task.owner
    if task.forward_url is not None:
        clause += ", forward_url = :forward_url"
        values["forward_url"] = task.forward_url
    return clause, values


def _identity_names(task: NewTask) -> dict[str, str]:
    names = {"#origin": "origin"}
    if task.owner is not None:
        names["#owner"] = "owner"  # OWNER is a reserved word
    return names


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


def _due_task_from_item(item: Mapping[str, Any]) -> DueTask:
    return DueTask(
        task_id=str(item["task_id"]),
        due_at=float(item["due_at"]),
        submitted_at=_float_or_none(item.get("submitted_at")) or float(item["due_at"]),
        poll_attempts=int(item.get("poll_attempts", 0)),
        last_checked_at=_float_or_none(item.get("last_checked_at")),
        method=str(item["method"]) if "method" in item else None,
    )


def _solve_samples(raw: object) -> dict[str, list[float]]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(method): [float(value) for value in values if isinstance(value, Decimal | int)]
        for method, values in raw.items()
        if isinstance(values, list)
    }


def _task_from_item(item: Mapping[str, Any]) -> Task:
    has_request = "method" in item
    via = item.get("delivered_via")
    return Task(
        task_id=str(item["task_id"]),
        status=TaskStatus(item["status"]),
        request=CaptchaRequest.from_document(item) if has_request else None,
        submitted_at=_float_or_none(item.get("submitted_at")),
        received_at=_float_or_none(item.get("received_at")),
        solution=item.get("solution"),
        delivered_via=DeliveryPath(via) if via else None,
        error=item.get("error"),
        poll_attempts=int(item.get("poll_attempts", 0)),
        due_at=_float_or_none(item.get("due_at")),
        owner=_text_or_none(item.get("owner")),
        nonce=_text_or_none(item.get("nonce")),
        finished_after=_float_or_none(item.get("finished_after")),
        usable_until=_float_or_none(item.get("usable_until")),
        last_checked_at=_float_or_none(item.get("last_checked_at")),
        read_through_at=_float_or_none(item.get("read_through_at")),
        reported=ReportVerdict(item["reported"]) if item.get("reported") else None,
        reported_at=_float_or_none(item.get("reported_at")),
        origin=TaskOrigin(item["origin"]) if item.get("origin") in set(TaskOrigin) else None,
        rivals={str(nonce): str(owner) for nonce, owner in dict(item.get("rivals") or {}).items()},
        forward_url=_text_or_none(item.get("forward_url")),
    )


def _owned_by(item: Mapping[str, Any], owner: str) -> bool:
    """OWNED_BY_CALLER, judged on an item DynamoDB handed back."""
    if "owner" in item:
        return bool(item["owner"] == owner)
    return "nonce" not in item and "submitted_at" in item


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _refused_report(old: Mapping[str, Any] | None, now: float, owner: str | None) -> ReportClaim:
    if not old or (owner is not None and not _owned_by(old, owner)):
        return ReportClaim.UNKNOWN_TASK
    if old.get("origin") == TaskOrigin.SMOKE.value:
        return ReportClaim.UNKNOWN_TASK
    if "solution" not in old:
        return ReportClaim.NOT_SOLVED
    lease = _float_or_none(old.get("report_lease_until"))
    if "reported" in old and (lease is None or lease >= now):
        return ReportClaim.ALREADY_REPORTED
    return ReportClaim.WINDOW_CLOSED
