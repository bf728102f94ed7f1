"""The example result consumer against moto: each result is applied once, however often it
arrives (same event again, or the same result re-published as a new event)."""

from __future__ import annotations

import importlib
import sys
import time
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyKeyError,
    IdempotencyPersistenceLayerError,
)
from botocore.exceptions import EndpointConnectionError
from moto import mock_aws

from infra.lambda_context import FakeLambdaContext
from result_consumer.applied import ApplyFailed
from tests.integration.handler_support import table_writes_unavailable
from tests.result_events import rendered_detail
from tests.support import template

IDEMPOTENCY_TABLE = "pg-consumer-idempotency"
APPLIED_TABLE = "pg-consumer-applied"
TABLE_KEYS = ("AttributeDefinitions", "KeySchema", "BillingMode")


def result_event(task_id: str, status: str, **detail: str) -> dict[str, Any]:
    """A `Task Result` event as the bus delivers it, detail as the input template writes it."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Task Result",
        "source": "pingback-guard",
        "account": "123456789012",
        "time": "2026-11-30T20:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": rendered_detail(
            task_id, status, "03AFcWeA" + "T" * 300 if status == "SOLVED" else "", **detail
        ),
    }


def create_table_like(client: Any, logical_id: str, name: str) -> None:
    properties = template()["Resources"][logical_id]["Properties"]
    client.create_table(TableName=name, **{key: properties[key] for key in TABLE_KEYS})


@pytest.fixture
def consumer(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", IDEMPOTENCY_TABLE)
    monkeypatch.setenv("APPLIED_TABLE_NAME", APPLIED_TABLE)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table_like(client, "ResultConsumerIdempotencyTable", IDEMPOTENCY_TABLE)
        create_table_like(client, "ResultConsumerAppliedTable", APPLIED_TABLE)
        sys.modules.pop("result_consumer.handler", None)
        yield importlib.import_module("result_consumer.handler")
        sys.modules.pop("result_consumer.handler", None)


def applied_counts(counter: str = "applied_count") -> dict[tuple[str, str], int]:
    """One of the applied-results table's counters, per (task id, status) that has it."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    items = client.scan(TableName=APPLIED_TABLE)["Items"]
    return {
        (item["task_id"]["S"], item["status"]["S"]): int(item[counter]["N"])
        for item in items
        if counter in item
    }


def test_the_same_event_delivered_twice_is_applied_once(consumer: ModuleType) -> None:
    event = result_event("1001", "SOLVED")

    first = consumer.handler(event, FakeLambdaContext())
    second = consumer.handler(event, FakeLambdaContext())

    assert first == second == {"task_id": "1001", "status": "SOLVED", "applied": True}
    assert applied_counts() == {("1001", "SOLVED"): 1}


def test_the_same_result_republished_as_a_new_event_is_applied_once(
    consumer: ModuleType,
) -> None:
    # Given the pipe re-put a batch: same detail, new event id and time
    original = result_event("1002", "FAILED", error="ERROR_CAPTCHA_UNSOLVABLE")
    republished = {**original, "id": str(uuid.uuid4()), "time": "2026-11-30T20:00:09Z"}

    for event in (original, republished, original):
        consumer.handler(event, FakeLambdaContext())

    assert applied_counts() == {("1002", "FAILED"): 1}


def test_a_later_different_final_status_is_a_new_result(consumer: ModuleType) -> None:
    # EXPIRED first (unrecovered), then a late pingback solved it: both are applied, once each
    for event in (
        result_event("1003", "EXPIRED", delivered_via="", error="EXPIRED_UNRECOVERED"),
        result_event("1003", "SOLVED", previous_status="EXPIRED", delivered_via="callback"),
        result_event("1003", "EXPIRED", delivered_via="", error="EXPIRED_UNRECOVERED"),
    ):
        consumer.handler(event, FakeLambdaContext())

    assert applied_counts() == {("1003", "EXPIRED"): 1, ("1003", "SOLVED"): 1}


def test_a_failed_apply_is_applied_once_when_the_event_comes_again(
    consumer: ModuleType,
) -> None:
    event = result_event("1004", "SOLVED")

    outage = table_writes_unavailable(consumer.dynamodb)
    with pytest.raises(ApplyFailed):
        consumer.handler(event, FakeLambdaContext())
    outage.set_rules(())
    assert applied_counts() == {}

    consumer.handler(event, FakeLambdaContext())
    consumer.handler(event, FakeLambdaContext())

    assert applied_counts() == {("1004", "SOLVED"): 1}


def test_a_rerun_after_the_idempotency_record_was_not_saved_applies_nothing_again(
    consumer: ModuleType,
) -> None:
    # Given the effect was applied, then the table became unreachable before Powertools saved
    # its completed record: the record stays in progress until the invocation's time is up
    event = result_event("1005", "SOLVED")

    def idempotency_table_unavailable(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == IDEMPOTENCY_TABLE:
            raise EndpointConnectionError(endpoint_url="https://dynamodb.test")

    hook = "before-parameter-build.dynamodb.UpdateItem"
    consumer.dynamodb.meta.events.register(hook, idempotency_table_unavailable)
    with pytest.raises(IdempotencyPersistenceLayerError):
        consumer.handler(event, FakeLambdaContext(timeout_seconds=0.05))
    consumer.dynamodb.meta.events.unregister(hook, idempotency_table_unavailable)
    time.sleep(0.1)

    # When the retry runs the handler again after the in-progress expiry
    consumer.handler(event, FakeLambdaContext())

    # Then the conditional effect refused the repeat
    assert applied_counts() == {("1005", "SOLVED"): 1}
    assert applied_counts("repeats_refused") == {("1005", "SOLVED"): 1}


def test_an_event_without_a_result_is_refused_and_applies_nothing(
    consumer: ModuleType,
) -> None:
    with pytest.raises(IdempotencyKeyError):
        consumer.handler({"detail": {"note": "not a result"}}, FakeLambdaContext())
    assert applied_counts() == {}
