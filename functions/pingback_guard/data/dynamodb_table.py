"""The one table every data module shares: its requests, their errors and its value encoding.

Every write is a single conditional request, so a first callback costs one write and no read.
A refused condition (duplicate, conflict, lost race) is judged from the old item DynamoDB hands
back with the refusal (ReturnValuesOnConditionCheckFailure=ALL_OLD): no read, no GetItem grant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import StoreError, StoreUnavailableError
from pingback_guard.settings.table import TableSettings

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
BATCH_GET_KEYS = 100
# Not tasks: task ids are digits, so keys starting with "#" never collide with one and no route
# reads them (the poller's lease, the pingback URLs' items).
NON_TASK_KEY_PREFIX = "#"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class ConditionRefused(Exception):
    """Internal: a conditional write was refused; carries the item as it was."""

    def __init__(self, old_item: Mapping[str, Any] | None) -> None:
        super().__init__("condition refused")
        self.old_item = old_item


def dynamodb_call(operation: str, send: Callable[..., Any], **request: Any) -> Any:
    """Send one request; map boto errors to domain errors and refusals to ConditionRefused."""
    try:
        return send(**request)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == CONDITION_FAILED:
            raw_old: Mapping[str, Any] | None = error.response.get("Item")  # type: ignore[assignment]
            raise ConditionRefused(item_to_python(raw_old) if raw_old else None) from None
        if code in UNAVAILABLE_ERROR_CODES:
            raise StoreUnavailableError(f"DynamoDB {operation}: {code}") from None
        raise StoreError(f"DynamoDB {operation} failed: {code}") from None
    except BotoCoreError as error:
        raise StoreUnavailableError(f"DynamoDB {operation}: {type(error).__name__}") from None


def values(**named: object) -> dict[str, Any]:
    """ExpressionAttributeValues: ``:name`` for each name, floats as Decimals."""
    return {f":{name}": _serializer.serialize(_plain(value)) for name, value in named.items()}


def _plain(value: object) -> object:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def item_to_python(item: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _deserializer.deserialize(value) for key, value in item.items()}


def float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, Decimal | int | float) else None


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


class ItemTable:
    """Requests on the table's items, keyed by ``task_id`` (a task's id or a NON_TASK key)."""

    def __init__(self, client: DynamoDBClient, settings: TableSettings) -> None:
        self.client = client
        self.settings = settings

    @property
    def name(self) -> str:
        return self.settings.table_name

    def expiry(self, moment: float) -> int:
        """The TTL of an item written at ``moment`` that keeps a result."""
        return int(moment) + self.settings.result_ttl_seconds

    def get_item(self, key: str) -> dict[str, Any] | None:
        answer = self.call(
            "GetItem",
            self.client.get_item,
            TableName=self.name,
            Key={"task_id": {"S": key}},
            ConsistentRead=True,
        )
        item = answer.get("Item")
        return item_to_python(item) if item else None

    def update(
        self,
        key: str,
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
            "TableName": self.name,
            "Key": {"task_id": {"S": key}},
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
        answer = self.call("UpdateItem", self.client.update_item, **request)
        return item_to_python(answer.get("Attributes") or {})

    def batch_get(self, keys: Sequence[str], projection: str) -> Iterator[dict[str, Any]]:
        """The items of these keys that exist (eventually consistent), ``projection`` only.
        BatchGetItem reads at most 100 keys a request, and keys it did not get to (throttling)
        are asked again at once:
        https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html"""
        every = [{"task_id": {"S": key}} for key in keys]
        for start in range(0, len(every), BATCH_GET_KEYS):
            wanted = every[start : start + BATCH_GET_KEYS]
            while wanted:
                answer = self.call(
                    "BatchGetItem",
                    self.client.batch_get_item,
                    RequestItems={self.name: {"Keys": wanted, "ProjectionExpression": projection}},
                )
                for raw in answer.get("Responses", {}).get(self.name, []):
                    yield item_to_python(raw)
                wanted = answer.get("UnprocessedKeys", {}).get(self.name, {}).get("Keys", [])

    @staticmethod
    def call(operation: str, send: Callable[..., Any], **request: Any) -> Any:
        return dynamodb_call(operation, send, **request)
