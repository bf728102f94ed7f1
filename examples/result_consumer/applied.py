"""The consumer's own record of the results it applied (the only DynamoDB code of the example).

The Idempotency utility in the handler absorbs repeated events, but its record and this effect
are two writes: when saving the record fails after the effect (the table became unreachable in
between), the retry after the in-progress expiry runs the handler again. So the effect is itself
conditional, and such a repeat is counted as `repeats_refused`, never applied.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from result_consumer.event import ResultEvent

_CONDITION_FAILED = "ConditionalCheckFailedException"


class ApplyFailed(RuntimeError):
    """The applied-results table refused or could not be reached; the event will be retried."""


class AppliedResults:
    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table_name = table_name

    def apply(self, result: ResultEvent) -> bool:
        """Apply `result` once (the token itself is never stored here); False if it already was."""
        values: dict[str, Any] = {
            ":one": {"N": "1"},
            ":now": {"N": str(Decimal(repr(time.time())))},
            ":via": {"S": result.delivered_via or ""},
            ":has_token": {"BOOL": result.solution is not None},
        }
        applied = self._update(
            result,
            UpdateExpression=(
                "ADD applied_count :one SET last_applied_at = :now,"
                " delivered_via = :via, had_token = :has_token"
            ),
            ConditionExpression="attribute_not_exists(applied_count)",
            ExpressionAttributeValues=values,
        )
        if not applied:
            self._update(
                result,
                UpdateExpression="ADD repeats_refused :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        return applied

    def _update(self, result: ResultEvent, **request: Any) -> bool:
        """Whether the write was made (False: its condition did not hold)."""
        try:
            self._client.update_item(
                TableName=self._table_name,
                Key={"task_id": {"S": result.task_id}, "status": {"S": result.status}},
                **request,
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == _CONDITION_FAILED:
                return False
            raise ApplyFailed(f"DynamoDB UpdateItem failed: {code}") from None
        except BotoCoreError as error:
            raise ApplyFailed(f"DynamoDB UpdateItem: {type(error).__name__}") from None
        return True
