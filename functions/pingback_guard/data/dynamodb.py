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
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    DueTask,
    NewTask,
    ReportClaim,
    ReportVerdict,
    StoreOutcome,
    SubmissionOutcome,
    Task,
    TaskResult,
    TaskStatus,
)
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
        request = task.request
        described = {
            "method": request.method,
            "sitekey": request.sitekey,
            "page_url": request.page_url,
            "extras": dict(request.extras),
            "submitted_at": task.submitted_at,
        }
        try:
            self._update(
                task.task_id,
                "SET #method = :method, sitekey = :sitekey, page_url = :page_url,"
                " extras = :extras, submitted_at = :submitted_at, #status = :pending,"
                " due_shard = :shard, due_at = :due, poll_attempts = :zero, expires_at = :ttl,"
                " token_lifetime_seconds = :lifetime",
                condition="attribute_not_exists(#status)",
                names={"#method": "method", "#status": "status"},
                values=_values(
                    **described,
                    pending=TaskStatus.PENDING.value,
                    shard=due_shard_of(task.task_id, self._settings.due_shards),
                    due=task.first_poll_at,
                    zero=0,
                    ttl=self._expiry(task.submitted_at),
                    lifetime=self._settings.token_lifetimes.for_method(request.method),
                ),
            )
        except ConditionRefused:
            self._describe_finished_task(task.task_id, described)
            return SubmissionOutcome.RESULT_ALREADY_STORED
        return SubmissionOutcome.CREATED

    def _describe_finished_task(self, task_id: str, described: Mapping[str, object]) -> None:
        """A result beat the submitter: add what was asked, keep status and solution."""
        try:
            self._update(
                task_id,
                "SET #method = :method, sitekey = :sitekey, page_url = :page_url,"
                " extras = :extras, submitted_at = :submitted_at",
                condition="attribute_exists(#status) AND #status <> :pending",
                names={"#method": "method", "#status": "status"},
                values=_values(**described, pending=TaskStatus.PENDING.value),
            )
        except ConditionRefused:
            return

    def record_result(self, result: TaskResult) -> StoreOutcome:
        """A task the table does not know yet (no token_lifetime_seconds) gets the shortest
        lifetime: its usable_until may be early, never late."""
        try:
            self._update(
                result.task_id,
                "SET solution = :code, #status = :solved, received_at = :received,"
                " delivered_via = :via, expires_at = :ttl, finished_after = :finished,"
                " usable_until = if_not_exists(token_lifetime_seconds, :lifetime) + :finished"
                " REMOVE due_shard, due_at, #error",
                condition="attribute_not_exists(solution)",
                names={"#status": "status", "#error": "error"},
                values=_values(
                    code=result.code,
                    solved=TaskStatus.SOLVED.value,
                    received=result.received_at,
                    via=result.delivered_via.value,
                    ttl=self._expiry(result.received_at),
                    finished=result.finished_at_earliest,
                    lifetime=self._settings.token_lifetimes.shortest,
                ),
            )
        except ConditionRefused as refused:
            # No old item cannot happen on DynamoDB; if it did, a conflict alarm is the safe call.
            old = refused.old_item or {}
            same = old.get("solution") == result.code
            return StoreOutcome.DUPLICATE if same else StoreOutcome.CONFLICT
        return StoreOutcome.STORED

    def record_failure(self, result: TaskResult) -> StoreOutcome:
        try:
            self._update(
                result.task_id,
                "SET #status = :failed, #error = :code, received_at = :received,"
                " delivered_via = :via, expires_at = :ttl REMOVE due_shard, due_at",
                condition="attribute_not_exists(solution) AND (attribute_not_exists(#status)"
                " OR #status IN (:pending, :expired))",
                names={"#status": "status", "#error": "error"},
                values=_values(
                    failed=TaskStatus.FAILED.value,
                    code=result.code,
                    received=result.received_at,
                    via=result.delivered_via.value,
                    ttl=self._expiry(result.received_at),
                    pending=TaskStatus.PENDING.value,
                    expired=TaskStatus.EXPIRED.value,
                ),
            )
        except ConditionRefused as refused:
            old = refused.old_item or {}
            same = old.get("status") == TaskStatus.FAILED.value and old.get("error") == result.code
            return StoreOutcome.DUPLICATE if same else StoreOutcome.CONFLICT
        return StoreOutcome.STORED

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

    def reschedule_poll(self, task_id: str, due_at: float, poll_attempts: int) -> bool:
        try:
            self._update(
                task_id,
                "SET due_at = :due, poll_attempts = :attempts",
                condition="#status = :pending",
                names={"#status": "status"},
                values=_values(
                    due=due_at, attempts=poll_attempts, pending=TaskStatus.PENDING.value
                ),
                return_old=False,
            )
        except ConditionRefused:
            return False
        return True

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

    def claim_report(
        self,
        task_id: str,
        verdict: ReportVerdict,
        now: float,
        window_start: float,
        lease_seconds: float,
    ) -> ReportClaim:
        """One conditional write decides; a refusal is judged from the old item, no read."""
        try:
            self._update(
                task_id,
                "SET reported = :verdict, reported_at = :now, report_lease_until = :lease",
                condition="attribute_exists(solution)"
                " AND (attribute_not_exists(reported) OR report_lease_until < :now)"
                " AND (finished_after >= :window_start"
                " OR (attribute_not_exists(finished_after) AND received_at >= :window_start))",
                names={},
                values=_values(
                    verdict=verdict.value,
                    now=now,
                    lease=now + lease_seconds,
                    window_start=window_start,
                ),
            )
        except ConditionRefused as refused:
            return _refused_report(refused.old_item, now)
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
            "ProjectionExpression": "task_id, due_at, submitted_at, poll_attempts",
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
    ) -> None:
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
        self._call("UpdateItem", self._client.update_item, **request)

    @staticmethod
    def _call(operation: str, send: Callable[..., Any], **request: Any) -> Any:
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


def _due_task_from_item(item: Mapping[str, Any]) -> DueTask:
    return DueTask(
        task_id=str(item["task_id"]),
        due_at=float(item["due_at"]),
        submitted_at=_float_or_none(item.get("submitted_at")) or float(item["due_at"]),
        poll_attempts=int(item.get("poll_attempts", 0)),
    )


def _task_from_item(item: Mapping[str, Any]) -> Task:
    has_request = "method" in item
    via = item.get("delivered_via")
    return Task(
        task_id=str(item["task_id"]),
        status=TaskStatus(item["status"]),
        request=CaptchaRequest(
            method=str(item["method"]),
            sitekey=str(item.get("sitekey", "")),
            page_url=str(item.get("page_url", "")),
            extras={str(k): str(v) for k, v in dict(item.get("extras", {})).items()},
        )
        if has_request
        else None,
        submitted_at=_float_or_none(item.get("submitted_at")),
        received_at=_float_or_none(item.get("received_at")),
        solution=item.get("solution"),
        delivered_via=DeliveryPath(via) if via else None,
        error=item.get("error"),
        poll_attempts=int(item.get("poll_attempts", 0)),
        due_at=_float_or_none(item.get("due_at")),
        finished_after=_float_or_none(item.get("finished_after")),
        usable_until=_float_or_none(item.get("usable_until")),
        last_checked_at=_float_or_none(item.get("last_checked_at")),
        read_through_at=_float_or_none(item.get("read_through_at")),
        reported=ReportVerdict(item["reported"]) if item.get("reported") else None,
        reported_at=_float_or_none(item.get("reported_at")),
    )


def _refused_report(old: Mapping[str, Any] | None, now: float) -> ReportClaim:
    if not old:
        return ReportClaim.UNKNOWN_TASK
    if "solution" not in old:
        return ReportClaim.NOT_SOLVED
    lease = _float_or_none(old.get("report_lease_until"))
    if "reported" in old and (lease is None or lease >= now):
        return ReportClaim.ALREADY_REPORTED
    return ReportClaim.WINDOW_CLOSED
