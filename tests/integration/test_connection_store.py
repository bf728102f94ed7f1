"""DynamoDbConnectionStore on moto: push connection records in the tasks table (issue 24)."""

from __future__ import annotations

from typing import Any

import pytest

from pingback_guard.data.connections import (
    Connection,
    DynamoDbConnectionStore,
    TooManyConnections,
    owner_key,
)
from tests.integration.conftest import TABLE_NAME

OWNER = "arn:aws:sts::123456789012:assumed-role/workers/" + "w" * 1900
OTHER = "arn:aws:iam::123456789012:user/other"
NOW = 1_800_000_000.0


@pytest.fixture
def store(dynamodb: Any) -> DynamoDbConnectionStore:
    return DynamoDbConnectionStore(dynamodb, TABLE_NAME, clock=lambda: NOW)


def test_connections_are_found_by_owner_and_forgotten_on_disconnect(
    store: DynamoDbConnectionStore,
) -> None:
    store.add(Connection("abc=", OWNER, NOW + 7200), max_per_owner=5)
    store.add(Connection("def=", OWNER, NOW + 7300), max_per_owner=5)
    store.add(Connection("ghi=", OTHER, NOW + 7200), max_per_owner=5)
    assert sorted(c.connection_id for c in store.of_owner(OWNER, NOW)) == ["abc=", "def="]
    assert store.owner_of("abc=") == OWNER
    store.remove("abc=")
    assert [c.connection_id for c in store.of_owner(OWNER, NOW)] == ["def="]
    assert store.owner_of("abc=") is None
    store.remove("never-connected=")


def test_a_gone_connection_is_dropped_and_expired_ones_are_not_returned(
    store: DynamoDbConnectionStore,
) -> None:
    store.add(Connection("old=", OWNER, NOW - 1), max_per_owner=5)
    store.add(Connection("live=", OWNER, NOW + 60), max_per_owner=5)
    [live] = store.of_owner(OWNER, NOW)
    store.drop(live)
    assert store.of_owner(OWNER, NOW) == []


def test_the_owner_s_limit_is_kept_in_one_conditional_write(
    store: DynamoDbConnectionStore, dynamodb: Any
) -> None:
    store.add(Connection("a=", OWNER, NOW + 60), max_per_owner=2)
    store.add(Connection("b=", OWNER, NOW + 60), max_per_owner=2)
    with pytest.raises(TooManyConnections):
        store.add(Connection("c=", OWNER, NOW + 60), max_per_owner=2)
    item = dynamodb.get_item(TableName=TABLE_NAME, Key={"task_id": {"S": owner_key(OWNER)}})
    # Not a task: no status, no due index keys (the pipe and the poller never see it).
    assert {"status", "due_shard", "due_at"}.isdisjoint(item["Item"])
    assert "expires_at" in item["Item"]


def test_a_full_owner_loses_its_expired_connections_before_a_new_one_is_refused(
    store: DynamoDbConnectionStore,
) -> None:
    # Their $disconnect never came (best-effort on AWS): the elements outlived the connections.
    store.add(Connection("gone-1=", OWNER, NOW - 7200), max_per_owner=3)
    store.add(Connection("gone-2=", OWNER, NOW), max_per_owner=3)
    store.add(Connection("live=", OWNER, NOW + 60), max_per_owner=3)
    store.add(Connection("new=", OWNER, NOW + 7200), max_per_owner=3)
    store.add(Connection("newer=", OWNER, NOW + 7200), max_per_owner=3)
    assert sorted(c.connection_id for c in store.of_owner(OWNER, NOW)) == [
        "live=",
        "new=",
        "newer=",
    ]
    with pytest.raises(TooManyConnections):
        store.add(Connection("one-too-many=", OWNER, NOW + 7200), max_per_owner=3)
    assert store.owner_of("one-too-many=") is None
