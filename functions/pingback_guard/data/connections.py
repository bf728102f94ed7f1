"""Push connections: who is connected to the WebSocket API, by owner (the IAM principal).

Kept in the tasks table as two kinds of non-task items (task ids are digits, so these keys never
collide with one, and they have no status: the result events pipe and the due index skip them):

- ``#push-owner#<hash of the owner>``: ``connections`` (map connection id -> expires_at), so a
  result's push costs one read to find every connection of the task's owner;
- ``#push-connection#<connection id>``: its ``owner``, so $disconnect and messages, which carry
  no verified identity of their own, find it.

Both expire by the table's TTL (``expires_at``), after API Gateway's 2-hour connection limit.
The owner item lives on while its owner keeps connecting, and $disconnect is best-effort ("API
Gateway will try its best to deliver the $disconnect event to your integration, but it cannot
guarantee delivery": https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-websocket-api-route-keys-connect-disconnect.html),
so an element can outlive its connection: a full owner first loses its expired elements.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pingback_guard.data.dynamodb_table import ConditionRefused, dynamodb_call

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

OWNER_KEY_PREFIX = "#push-owner#"
CONNECTION_KEY_PREFIX = "#push-connection#"
ROOM_FOR_ONE_MORE = "attribute_not_exists(connections) OR size(connections) < :most"


@dataclass(frozen=True)
class Connection:
    connection_id: str
    owner: str
    expires_at: float


class TooManyConnections(Exception):
    """The owner already holds the most connections the stack allows one principal."""


class ConnectionStore(Protocol):
    def add(self, connection: Connection, max_per_owner: int) -> None:
        """Record a new connection; TooManyConnections when its owner holds the limit of
        connections that have not expired."""

    def owner_of(self, connection_id: str) -> str | None: ...

    def remove(self, connection_id: str) -> None:
        """Forget a closed connection (both records); nothing happens for an unknown one."""

    def of_owner(self, owner: str, now: float) -> list[Connection]:
        """The owner's connections that have not expired."""

    def drop(self, connection: Connection) -> None:
        """Forget a connection API Gateway says is gone."""


def owner_key(owner: str) -> str:
    # An ARN may be 2048 characters, the most a partition key holds: a digest always fits.
    return OWNER_KEY_PREFIX + hashlib.sha256(owner.encode()).hexdigest()


class DynamoDbConnectionStore:
    """The owner item's ``connections`` is a string set of "<expires_at> <connection id>": ADD
    creates it, size() bounds it, DELETE of the last element removes it, all in one request."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, clock: Callable[[], float] = time.time
    ) -> None:
        self._client = client
        self._table = table_name
        self._clock = clock

    def add(self, connection: Connection, max_per_owner: int) -> None:
        try:
            self._add_to_owner(connection, max_per_owner)
        except ConditionRefused as refusal:
            if not self._drop_expired(connection.owner, refusal.old_item):
                raise TooManyConnections(connection.owner) from None
            try:
                self._add_to_owner(connection, max_per_owner)
            except ConditionRefused:
                raise TooManyConnections(connection.owner) from None
        dynamodb_call(
            "PutItem",
            self._client.put_item,
            TableName=self._table,
            Item={
                **_key(CONNECTION_KEY_PREFIX + connection.connection_id),
                "owner": {"S": connection.owner},
                "expires_at": {"N": str(int(connection.expires_at))},
            },
        )

    def owner_of(self, connection_id: str) -> str | None:
        item = self._get(CONNECTION_KEY_PREFIX + connection_id) or {}
        owner = item.get("owner", {}).get("S")
        return str(owner) if owner else None

    def remove(self, connection_id: str) -> None:
        answer = dynamodb_call(
            "DeleteItem",
            self._client.delete_item,
            TableName=self._table,
            Key=_key(CONNECTION_KEY_PREFIX + connection_id),
            ReturnValues="ALL_OLD",
        )
        old = answer.get("Attributes", {})
        owner, expires_at = old.get("owner", {}).get("S"), old.get("expires_at", {}).get("N")
        if owner and expires_at:
            self.drop(Connection(connection_id, str(owner), float(expires_at)))

    def of_owner(self, owner: str, now: float) -> list[Connection]:
        item = self._get(owner_key(owner)) or {}
        found = [
            _connection(owner, element) for element in item.get("connections", {}).get("SS", [])
        ]
        return [connection for connection in found if connection.expires_at > now]

    def drop(self, connection: Connection) -> None:
        dynamodb_call(
            "UpdateItem",
            self._client.update_item,
            TableName=self._table,
            Key=_key(owner_key(connection.owner)),
            UpdateExpression="DELETE connections :one",
            ExpressionAttributeValues={":one": {"SS": [_element(connection)]}},
        )

    def _add_to_owner(self, connection: Connection, max_per_owner: int) -> None:
        dynamodb_call(
            "UpdateItem",
            self._client.update_item,
            TableName=self._table,
            Key=_key(owner_key(connection.owner)),
            UpdateExpression="ADD connections :one SET expires_at = :at",
            ConditionExpression=ROOM_FOR_ONE_MORE,
            ExpressionAttributeValues={
                ":one": {"SS": [_element(connection)]},
                ":at": {"N": str(int(connection.expires_at))},
                ":most": {"N": str(max_per_owner)},
            },
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    def _drop_expired(self, owner: str, owner_item: Mapping[str, Any] | None) -> bool:
        """Remove the owner's expired elements (from the item a refusal returned); False when
        none had expired."""
        now = self._clock()
        expired = [
            element
            for element in (owner_item or {}).get("connections", ())
            if _connection(owner, str(element)).expires_at <= now
        ]
        if not expired:
            return False
        dynamodb_call(
            "UpdateItem",
            self._client.update_item,
            TableName=self._table,
            Key=_key(owner_key(owner)),
            UpdateExpression="DELETE connections :expired",
            ExpressionAttributeValues={":expired": {"SS": expired}},
        )
        return True

    def _get(self, key: str) -> dict[str, Any] | None:
        answer = dynamodb_call(
            "GetItem",
            self._client.get_item,
            TableName=self._table,
            Key=_key(key),
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = answer.get("Item")
        return item


def _element(connection: Connection) -> str:
    return f"{int(connection.expires_at)} {connection.connection_id}"


def _connection(owner: str, element: str) -> Connection:
    expires_at, _, connection_id = element.partition(" ")
    return Connection(connection_id, owner, float(expires_at))


def _key(key: str) -> dict[str, Any]:
    return {"task_id": {"S": key}}
