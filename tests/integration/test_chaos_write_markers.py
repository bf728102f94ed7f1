"""The chaos verdict's "written more than once" check reads the calls the functions made and picks
the result writes out by their UpdateExpression text. These tests feed it the calls the real
store makes (on moto, accounted by the local stack's own botocore hooks), so a change to
data/results.py's expressions that the markers no longer match fails here, not silently in a
chaos run that finds nothing."""

from __future__ import annotations

from typing import Any

import pytest

from infra.chaos.checker import result_writes_per_task, verdict
from infra.local.runtime.aws_hooks import AwsCallHooks
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.task import DeliveryPath, StoreOutcome, TaskResult
from pingback_guard.settings.table import TableSettings
from tests.integration.test_store_contract import TOKEN, solved, submit


@pytest.fixture
def accounted(
    dynamodb: Any, table_settings: TableSettings
) -> tuple[DynamoDbTaskStore, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    AwsCallHooks("test", lambda call: calls.append(call.to_json())).attach(dynamodb.meta.events)
    return DynamoDbTaskStore(dynamodb, table_settings), calls


def test_a_stored_solution_and_a_stored_failure_each_count_as_one_result_write(accounted) -> None:
    store, calls = accounted
    submit(store, "200")
    submit(store, "201")
    assert store.record_result(solved("200")) is StoreOutcome.STORED
    failure = TaskResult("201", "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.POLL, 1030.0)
    assert store.record_failure(failure) is StoreOutcome.STORED
    # A refused duplicate is not a write, nor is a result kept for an id no task holds yet.
    assert store.record_result(solved("200")) is not StoreOutcome.STORED
    assert store.record_result(solved("202")) is StoreOutcome.STORED_UNREGISTERED

    assert result_writes_per_task(calls) == {"200": 1, "201": 1}


def test_a_second_stored_result_for_one_task_is_flagged(
    accounted, dynamodb: Any, table_settings: TableSettings
) -> None:
    store, calls = accounted
    submit(store, "300")
    assert store.record_result(solved("300")) is StoreOutcome.STORED
    # Given a store that lost its condition: the solution is gone and is written again.
    dynamodb.update_item(
        TableName=table_settings.table_name,
        Key={"task_id": {"S": "300"}},
        UpdateExpression="REMOVE solution",
    )
    assert store.record_result(solved("300", via=DeliveryPath.POLL)) is StoreOutcome.STORED

    truth = [{"id": "300", "outcome": "solved", "code": TOKEN}]
    table = {"300": {"task_id": "300", "status": "SOLVED", "solution": TOKEN}}
    assert verdict(truth, table, calls, {}).written_more_than_once == ["300"]
