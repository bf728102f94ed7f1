"""The consumer's own record of the results it applied (the only DynamoDB code of the example).

`apply` is deliberately NOT idempotent (it counts every application): the Idempotency utility
in the handler is what makes each result apply once, and the count proves it.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from result_consumer.event import ResultEvent


class ApplyFailed(RuntimeError):
    """The applied-results table refused or could not be reached; the event will be retried."""


class AppliedResults:
    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table_name = table_name

    def apply(self, result: ResultEvent) -> None:
        """Count one application of `result` (the token itself is never stored here)."""
        values: dict[str, Any] = {
            ":one": {"N": "1"},
            ":now": {"N": str(Decimal(repr(time.time())))},
            ":via": {"S": result.delivered_via or ""},
            ":has_token": {"BOOL": result.solution is not None},
        }
        try:
            self._client.update_item(
                TableName=self._table_name,
                Key={"task_id": {"S": result.task_id}, "status": {"S": result.status}},
                UpdateExpression=(
                    "ADD applied_count :one SET last_applied_at = :now,"
                    " delivered_via = :via, had_token = :has_token"
                ),
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            raise ApplyFailed(f"DynamoDB UpdateItem failed: {code}") from None
        except BotoCoreError as error:
            raise ApplyFailed(f"DynamoDB UpdateItem: {type(error).__name__}") from None
