"""Run the real poller (and callback) handler in a fresh interpreter with tracing on, as in Lambda.

Usage: python -m tests.tracing.traced_run <provider_base_url>. The caller sets the environment:
AWS_XRAY_DAEMON_ADDRESS (its fake daemon), _X_AMZN_TRACE_ID, LAMBDA_TASK_ROOT, and leaves
POWERTOOLS_TRACE_DISABLED unset. AWS is moto, in this process.
"""

from __future__ import annotations

import json
import os
import sys
import time

import boto3
from moto import mock_aws

from infra.lambda_context import FakeLambdaContext
from infra.moto_atomic import make_dynamodb_writes_atomic
from infra.project_template import create_tasks_table
from tests.integration.handler_support import API_KEY, SECRET, TABLE, TOKEN, callback_get
from tests.support import template_environment

PENDING_TASK_IDS = ("71000000001", "71000000002")


def main(provider_base_url: str) -> None:
    make_dynamodb_writes_atomic()
    with mock_aws():
        _create_resources()
        os.environ.update(_function_environment(provider_base_url))
        from pingback_guard.handlers import poller

        summary = poller.handler({"source": "pingback-guard.scheduler"}, FakeLambdaContext())
        from pingback_guard.handlers import callback

        answer = callback.handler(callback_get("71000000003", TOKEN), FakeLambdaContext())
    print(json.dumps({"poller": summary, "callback": answer.get("statusCode")}))


def _create_resources() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_tasks_table(dynamodb, TABLE)
    for task_id in PENDING_TASK_IDS:
        dynamodb.put_item(
            TableName=TABLE,
            Item={
                "task_id": {"S": task_id},
                "status": {"S": "PENDING"},
                "method": {"S": "userrecaptcha"},
                "submitted_at": {"N": str(time.time() - 30)},
                "due_shard": {"S": "0"},
                "due_at": {"N": str(time.time() - 1)},
                "poll_attempts": {"N": "0"},
            },
        )
    create_key_queue_and_secret()


def create_key_queue_and_secret() -> None:
    """The provider key parameter, the dead-letter queue and the callback secret (their names
    in DEAD_LETTER_QUEUE_URL and CALLBACK_SECRET_ID)."""
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name="/pg/provider-api-key", Value=API_KEY, Type="SecureString"
    )
    sqs = boto3.client("sqs", region_name="us-east-1")
    os.environ["DEAD_LETTER_QUEUE_URL"] = sqs.create_queue(QueueName="pg-dead-letter")["QueueUrl"]
    os.environ["CALLBACK_SECRET_ID"] = boto3.client(
        "secretsmanager", region_name="us-east-1"
    ).create_secret(
        Name="pg-callback-secret", SecretString=json.dumps({"current": SECRET, "previous": ""})
    )["ARN"]


def _function_environment(provider_base_url: str) -> dict[str, str]:
    """The poller's variables (the callback reads a subset) with this run's resources."""
    return template_environment(
        "PollerFunction",
        TRACING_MODE="Active",
        TASKS_TABLE_NAME=TABLE,
        DUE_SHARDS="1",
        PROVIDER_API_KEY_PARAMETER="/pg/provider-api-key",
        PROVIDER_BASE_URL=provider_base_url,
        PROVIDER_BATCH_IDS="false",
        PROVIDER_CONNECT_TIMEOUT_SECONDS="0.5",
        PROVIDER_CALL_DEADLINE_SECONDS="1",
        POLLER_RUN_SECONDS="0",
        POLLER_DEADLINE_MARGIN_SECONDS="1",
    )


if __name__ == "__main__":
    main(sys.argv[1])
