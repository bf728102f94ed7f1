from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.moto_atomic import make_dynamodb_writes_atomic
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.settings import TableSettings
from tests.support import create_tasks_table

TABLE_NAME = "pingback-guard-tasks-test"
SHARDS = 4


@pytest.fixture
def aws() -> Iterator[None]:
    make_dynamodb_writes_atomic()
    with mock_aws():
        yield


@pytest.fixture
def dynamodb(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_tasks_table(client, TABLE_NAME)
    return client


@pytest.fixture
def table_settings() -> TableSettings:
    return TableSettings(
        table_name=TABLE_NAME,
        due_index_name="DueIndex",
        due_shards=SHARDS,
        result_ttl_seconds=7 * 86400,
    )


@pytest.fixture
def dynamo_store(dynamodb: Any, table_settings: TableSettings) -> DynamoDbTaskStore:
    return DynamoDbTaskStore(dynamodb, table_settings)
