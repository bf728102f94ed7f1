"""boto3 errors become domain errors at the edge: unavailable (retry / DLQ) vs broken (config)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.errors import StoreError, StoreUnavailableError
from pingback_guard.domain.task import DeliveryPath, StoreOutcome, TaskResult
from pingback_guard.settings.table import TableSettings
from tests.fakes import TOKEN_LIFETIMES

SETTINGS = TableSettings("tasks", "DueIndex", 4, 86400, TOKEN_LIFETIMES, 600)
RESULT = TaskResult("42", "03AFcWeA" + "t" * 100, DeliveryPath.CALLBACK, 1.0)


def stubbed(code: str) -> DynamoDbTaskStore:
    client = boto3.client("dynamodb", region_name="us-east-1")
    stubber = Stubber(client)
    stubber.add_client_error("update_item", service_error_code=code, http_status_code=400)
    stubber.activate()
    return DynamoDbTaskStore(client, SETTINGS)


@pytest.mark.parametrize(
    "code",
    [
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    ],
)
def test_throttling_and_outages_are_unavailable(code: str) -> None:
    with pytest.raises(StoreUnavailableError, match=code):
        stubbed(code).record_result(RESULT)


@pytest.mark.parametrize(
    "code", ["ValidationException", "ResourceNotFoundException", "AccessDeniedException"]
)
def test_configuration_errors_are_store_errors_but_not_unavailable(code: str) -> None:
    with pytest.raises(StoreError, match=code) as raised:
        stubbed(code).record_result(RESULT)
    assert not isinstance(raised.value, StoreUnavailableError)


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="https://dynamodb.test"),
        ReadTimeoutError(endpoint_url="https://dynamodb.test"),
    ],
)
def test_network_failures_are_unavailable(error: Exception) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")

    def fail(**_: Any) -> None:
        raise error

    client.meta.events.register("before-send.dynamodb.UpdateItem", fail)
    with pytest.raises(StoreUnavailableError):
        DynamoDbTaskStore(client, SETTINGS).record_result(RESULT)


def test_a_refusal_is_judged_from_the_returned_old_item_without_a_read() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    stubber = Stubber(client)
    old = {"task_id": {"S": "42"}, "status": {"S": "SOLVED"}, "solution": {"S": RESULT.code}}
    stubber.add_client_error(
        "update_item",
        service_error_code="ConditionalCheckFailedException",
        modeled_fields={"Item": old},
    )
    stubber.add_client_error("update_item", service_error_code="ConditionalCheckFailedException")
    stubber.activate()
    store = DynamoDbTaskStore(client, SETTINGS)
    polled = TaskResult(RESULT.task_id, RESULT.code, DeliveryPath.POLL, 1.0)
    assert store.record_result(polled) is StoreOutcome.DUPLICATE
    assert store.record_result(polled) is StoreOutcome.CONFLICT  # no old item: flag it, never guess
    stubber.assert_no_pending_responses()


def test_a_pingback_refused_for_its_proof_is_rejected_not_a_conflict() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    stubber = Stubber(client)
    old = {"task_id": {"S": "42"}, "status": {"S": "PENDING"}, "nonce": {"S": "A" * 22}}
    stubber.add_client_error(
        "update_item",
        service_error_code="ConditionalCheckFailedException",
        modeled_fields={"Item": old},
    )
    stubber.activate()
    proven = TaskResult(RESULT.task_id, RESULT.code, DeliveryPath.CALLBACK, 1.0, nonce="B" * 22)
    assert DynamoDbTaskStore(client, SETTINGS).record_result(proven) is StoreOutcome.REJECTED
    stubber.assert_no_pending_responses()


def test_error_messages_carry_no_token() -> None:
    with pytest.raises(StoreError) as raised:
        stubbed("ValidationException").record_result(RESULT)
    assert RESULT.code not in str(raised.value)
