"""Per-worker keys in their DynamoDB table (the only code that reads it in the functions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import StoreError, StoreUnavailableError
from pingback_guard.domain.worker_keys import WorkerKey, dialect_named, threads_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


class WorkerKeyStore(Protocol):
    def find(self, key_id: str) -> WorkerKey | None:
        """The record named ``key_id`` (revoked or not), None when there is none."""


class DynamoDbWorkerKeys:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table_name = table_name

    def find(self, key_id: str) -> WorkerKey | None:
        try:
            # Consistent: a revocation holds from the next request on.
            answer = self._client.get_item(
                TableName=self._table_name, Key={"key_id": {"S": key_id}}, ConsistentRead=True
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            raise StoreError(f"DynamoDB GetItem (worker keys) failed: {code}") from None
        except BotoCoreError as error:
            raise StoreUnavailableError(
                f"DynamoDB GetItem (worker keys): {type(error).__name__}"
            ) from None
        item = answer.get("Item")
        if not item:
            return None
        revoked = item.get("revoked_at", {}).get("N")
        return WorkerKey(
            key_id=item["key_id"]["S"],
            digest=item.get("digest", {}).get("S", ""),
            owner=item.get("owner", {}).get("S", ""),
            created_at=float(item.get("created_at", {}).get("N", "0")),
            label=item.get("label", {}).get("S", ""),
            revoked_at=float(revoked) if revoked is not None else None,
            threads=threads_of(item.get("threads", {}).get("N")),
            dialect=dialect_named(item.get("dialect", {}).get("S")),
        )
