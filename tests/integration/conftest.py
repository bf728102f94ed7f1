from __future__ import annotations

import functools
import importlib
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from infra.dynamodb_local import DynamoDbLocal
from infra.moto_atomic import make_dynamodb_writes_atomic
from infra.project_template import create_tasks_table, functions_environment
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.settings.table import TableSettings
from tests.fakes import TOKEN_LIFETIMES
from tests.integration.handler_support import API_KEY, PREVIOUS_SECRET, SECRET, TABLE, Handlers
from tests.support import template

TABLE_NAME = "pingback-guard-tasks-test"
SHARDS = 4
# The handlers the suites load, in one process: the template's environment of each (they never
# disagree), with the tests' resources and a few test values over it.
HANDLER_FUNCTIONS = (
    "SubmitFunction",
    "GetTaskFunction",
    "RegisterFunction",
    "ReportFunction",
    "CallbackFunction",
    "ReplayFunction",
    "PollerFunction",
)


@functools.cache
def _default_session() -> boto3.Session:
    return boto3.Session()


@pytest.fixture
def aws() -> Iterator[None]:
    make_dynamodb_writes_atomic()
    with mock_aws():
        # mock_aws() resets boto3's default session: without one kept across tests, every
        # boto3.client() of every test would build a session and parse botocore's service
        # models again. moto intercepts the clients of any session alike.
        boto3.DEFAULT_SESSION = _default_session()
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
        provisional_ttl_seconds=600,
        token_lifetimes=TOKEN_LIFETIMES,
    )


@pytest.fixture
def dynamo_store(dynamodb: Any, table_settings: TableSettings) -> DynamoDbTaskStore:
    return DynamoDbTaskStore(dynamodb, table_settings)


@pytest.fixture(scope="module")
def dynamodb_local() -> Iterator[DynamoDbLocal]:
    """AWS's own engine, once per module that uses it (the store contract), stopped after it:
    later suites check that every process they start is gone."""
    with DynamoDbLocal() as engine:
        yield engine


@pytest.fixture
def dynamodb_local_client(dynamodb_local: DynamoDbLocal) -> Any:
    """A DynamoDB client of the running DynamoDB Local."""
    return boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=dynamodb_local.endpoint_url,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


@pytest.fixture
def dynamodb_local_store(
    dynamodb_local_client: Any, table_settings: TableSettings
) -> DynamoDbTaskStore:
    client = dynamodb_local_client
    table_name = f"pingback-guard-tasks-{uuid.uuid4().hex[:12]}"
    create_tasks_table(client, table_name)
    settings = TableSettings(
        table_name=table_name,
        due_index_name=table_settings.due_index_name,
        due_shards=table_settings.due_shards,
        result_ttl_seconds=table_settings.result_ttl_seconds,
        token_lifetimes=table_settings.token_lifetimes,
        provisional_ttl_seconds=table_settings.provisional_ttl_seconds,
    )
    return DynamoDbTaskStore(client, settings)


@pytest.fixture
def stack(aws: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_tasks_table(dynamodb, TABLE)
    sqs = boto3.client("sqs", region_name="us-east-1")
    parking = sqs.create_queue(QueueName="pg-parking")["QueueUrl"]
    parking_arn = sqs.get_queue_attributes(QueueUrl=parking, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    dlq = sqs.create_queue(
        QueueName="pg-dead-letter",
        Attributes={
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": parking_arn, "maxReceiveCount": "5"}
            )
        },
    )["QueueUrl"]
    secret_arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="pg-callback-secret",
        SecretString=json.dumps({"current": SECRET, "previous": PREVIOUS_SECRET}),
    )["ARN"]
    physical_ids = {
        "TasksTable": TABLE,
        "DeadLetterQueue": dlq,
        "CallbackSecret": secret_arn,
        "PollerFunction": "pg-poller",
    }
    env = {
        **functions_environment(template(), HANDLER_FUNCTIONS, physical_ids, "us-east-1"),
        # moto cannot run a function: the wake is proven by tests/unit and the local stack.
        "POLLER_WAKE_ON_SUBMIT": "false",
        "DUE_SHARDS": str(SHARDS),
        "PROVIDER_BASE_URL": "https://provider.invalid",
        "PINGBACK_VERIFICATION_TOKEN": "verify-me-123",
        "POLLER_DEADLINE_MARGIN_SECONDS": "1",
    }
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name=env["PROVIDER_API_KEY_PARAMETER"], Value=API_KEY, Type="SecureString"
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    parameters.clear_caches()
    return {"dynamodb": dynamodb, "sqs": sqs, "dlq": dlq, "parking": parking}


@pytest.fixture
def load(stack: dict[str, Any]) -> Iterator[Callable[[str], ModuleType]]:
    loaded: list[str] = []

    def load_handler(name: str) -> ModuleType:
        module_name = f"pingback_guard.handlers.{name}"
        sys.modules.pop(module_name, None)
        loaded.append(module_name)
        return importlib.import_module(module_name)

    yield load_handler
    for module_name in loaded:
        sys.modules.pop(module_name, None)


@pytest.fixture
def handlers(
    stack: dict[str, Any],
    load: Callable[[str], ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Handlers:
    return Handlers(stack, load, monkeypatch, capsys)
