"""The harness's repairs to moto's DynamoDB (infra/moto_atomic.py): a reader holding an item while
a write lands sees it whole, as DynamoDB guarantees."""

from __future__ import annotations

from typing import Any

from moto.backends import get_backend
from moto.core.models import DEFAULT_ACCOUNT_ID

from tests.integration.conftest import TABLE_NAME


def stored_item(task_id: str) -> Any:
    table: Any = get_backend("dynamodb")[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table(TABLE_NAME)
    return next(item for item in table.items.values() if item.hash_key.value == task_id)


def test_an_update_leaves_the_item_a_query_is_reading_unchanged(dynamodb: Any) -> None:
    # Given a due task, and a Query that has reached its item
    dynamodb.put_item(
        TableName=TABLE_NAME,
        Item={"task_id": {"S": "7"}, "due_shard": {"N": "1"}, "due_at": {"N": "100"}},
    )
    being_read = stored_item("7")

    # When the poller's write takes the task out of the due index
    dynamodb.update_item(
        TableName=TABLE_NAME,
        Key={"task_id": {"S": "7"}},
        UpdateExpression="REMOVE due_shard, due_at",
    )

    # Then the reader still has the item as it was, and the table has it as it is
    assert "due_at" in being_read.attrs
    assert "due_at" not in stored_item("7").attrs
