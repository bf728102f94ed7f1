"""The harness's repairs to moto's DynamoDB (infra/moto_atomic.py): a reader holding an item while
a write lands sees it whole, as DynamoDB guarantees."""

from __future__ import annotations

import threading
from typing import Any

from moto.backends import get_backend
from moto.core.models import DEFAULT_ACCOUNT_ID

from infra import moto_atomic
from tests.integration.conftest import TABLE_NAME


def stored_item(task_id: str) -> Any:
    table: Any = table_backend().get_table(TABLE_NAME)
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


def table_backend() -> Any:
    return get_backend("dynamodb")[DEFAULT_ACCOUNT_ID]["us-east-1"]


def write_in_background(dynamodb: Any, task_id: str) -> threading.Thread:
    thread = threading.Thread(
        target=dynamodb.put_item,
        kwargs={"TableName": TABLE_NAME, "Item": {"task_id": {"S": task_id}}},
    )
    thread.start()
    return thread


def key_of(task_id: str) -> dict[str, Any]:
    return {"task_id": {"S": task_id}}


def test_a_write_waits_for_its_own_item_only(dynamodb: Any) -> None:
    # Given a write of task "a" in progress (its item's lock held)
    backend = table_backend()
    held = moto_atomic.item_lock(backend, TABLE_NAME, key_of("a"))
    other = next(
        f"b{n}"
        for n in range(1000)
        if moto_atomic.item_lock(backend, TABLE_NAME, key_of(f"b{n}")) is not held
    )
    with held:
        # When two more writes come, one for another item and one for "a"
        other_write = write_in_background(dynamodb, other)
        same_write = write_in_background(dynamodb, "a")
        other_write.join(timeout=10)
        same_write.join(timeout=0.5)

        # Then the other item's write is done and the same item's write still waits
        assert not other_write.is_alive()
        assert same_write.is_alive()
    same_write.join(timeout=10)
    assert not same_write.is_alive()


def test_concurrent_writes_of_different_items_each_get_their_own_stream_record(
    dynamodb: Any,
) -> None:
    # Given a table with a stream, and eight writers, each writing items of its own
    dynamodb.update_table(
        TableName=TABLE_NAME,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    writers = [
        threading.Thread(
            target=lambda writer=writer: [
                dynamodb.put_item(TableName=TABLE_NAME, Item=key_of(f"{writer}-{n}"))
                for n in range(40)
            ]
        )
        for writer in range(8)
    ]

    # When they all write at once
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)

    # Then the table's stream has one record per write, each with a sequence number of its own
    shard = table_backend().get_table(TABLE_NAME).stream_shard
    numbers = [record.record["dynamodb"]["SequenceNumber"] for record in shard.items]
    assert len(numbers) == 8 * 40
    assert len(set(numbers)) == len(numbers)


def test_an_update_creating_its_item_is_seen_whole_or_not_at_all(
    dynamodb: Any, monkeypatch: Any
) -> None:
    # Given a reader that looks at the table while moto applies an update's expression
    from moto.dynamodb.parsing.executors import UpdateExpressionExecutor

    seen_mid_update: list[Any] = []
    execute = UpdateExpressionExecutor.execute

    def execute_and_look(executor: Any, node: Any = None) -> Any:
        if node is None:
            seen_mid_update.append(table_backend().tables[TABLE_NAME].items.get(stored_key("9")))
        return execute(executor, node)

    monkeypatch.setattr(UpdateExpressionExecutor, "execute", execute_and_look)

    # When an UpdateItem creates the item
    dynamodb.update_item(
        TableName=TABLE_NAME,
        Key=key_of("9"),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "SOLVED"}},
    )

    # Then the reader saw no item (not its key alone), and the table has it whole
    assert seen_mid_update == [None]
    assert stored_item("9").attrs["status"].value == "SOLVED"


def test_an_update_creating_its_item_writes_one_stream_record(dynamodb: Any) -> None:
    # Given a table with a stream
    dynamodb.update_table(
        TableName=TABLE_NAME,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )

    # When an UpdateItem creates an item, and another changes it
    for status in ("PENDING", "SOLVED"):
        dynamodb.update_item(
            TableName=TABLE_NAME,
            Key=key_of("8"),
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": status}},
        )

    # Then the stream has one INSERT with the whole item and one MODIFY, as DynamoDB writes them
    records = [record.record for record in table_backend().get_table(TABLE_NAME).stream_shard.items]
    assert [record["eventName"] for record in records] == ["INSERT", "MODIFY"]
    assert records[0]["dynamodb"]["NewImage"]["status"] == {"S": "PENDING"}
    assert records[1]["dynamodb"]["OldImage"]["status"] == {"S": "PENDING"}


def stored_key(task_id: str) -> Any:
    from moto.dynamodb.models.dynamo_type import DynamoType

    return DynamoType({"S": task_id})
