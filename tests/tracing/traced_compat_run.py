"""Run the real in.php and res.php handlers in a fresh interpreter with tracing on, as in Lambda.

Usage: python -m tests.tracing.traced_compat_run <provider_base_url>. The caller sets the tracing
environment as for traced_run. AWS is moto, in this process; the worker key is registered in the
keys table as `pingback-guard keys issue` does (its hash only).
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from infra.lambda_context import FakeLambdaContext
from infra.project_template import create_declared_table, create_tasks_table
from pingback_guard.domain.worker_keys import digest_of
from tests.integration.handler_support import TABLE
from tests.support import template_environment
from tests.tracing.traced_run import create_key_queue_and_secret

WORKER_KEY = "5ec7e7c0ffee5ec7e7c0ffee5ec7e7c0"
KEYS_TABLE = "pg-worker-keys"
BUDGETS_TABLE = "pg-request-budgets"
EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLE_KEY = "0123456789abcdef0123456789abcdef"  # the committed events' made-up key


def main(provider_base_url: str) -> None:
    with mock_aws():
        _create_resources()
        os.environ.update(_environment("CompatSubmitFunction", provider_base_url))
        from pingback_guard.handlers import in_php

        answers = [
            in_php.handler(_event(name), FakeLambdaContext())
            for name in ("in_php_post_form.json", "in_php_get.json")
        ]
        os.environ.update(_environment("CompatResultFunction", provider_base_url))
        from pingback_guard.handlers import res_php

        answers += [
            res_php.handler(_event(name), FakeLambdaContext())
            for name in ("res_php_get.json", "res_php_post_report.json")
        ]
    print(json.dumps([{"status": a["statusCode"], "body": a["body"]} for a in answers]))


def _event(name: str) -> dict[str, Any]:
    """A committed sample event with this run's worker key in place of the made-up one."""
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    event["rawQueryString"] = event["rawQueryString"].replace(SAMPLE_KEY, WORKER_KEY)
    if "queryStringParameters" in event:
        event["queryStringParameters"]["key"] = WORKER_KEY
    if event.get("body"):
        form = base64.b64decode(event["body"]).replace(SAMPLE_KEY.encode(), WORKER_KEY.encode())
        event["body"] = base64.b64encode(form).decode()
    return event


def _create_resources() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_tasks_table(dynamodb, TABLE)
    create_declared_table(dynamodb, "RequestBudgetsTable", BUDGETS_TABLE)
    dynamodb.create_table(
        TableName=KEYS_TABLE,
        AttributeDefinitions=[{"AttributeName": "key_id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "key_id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    digest = digest_of(WORKER_KEY)
    dynamodb.put_item(
        TableName=KEYS_TABLE,
        Item={
            "key_id": {"S": digest.key_id},
            "digest": {"S": digest.digest},
            "owner": {"S": "arn:aws:iam::123456789012:user/worker"},
            "created_at": {"N": "1767225600"},
        },
    )
    create_key_queue_and_secret()


def _environment(function: str, provider_base_url: str) -> dict[str, str]:
    overrides = {
        "TRACING_MODE": "Active",
        "TASKS_TABLE_NAME": TABLE,
        "WORKER_KEYS_TABLE_NAME": KEYS_TABLE,
        "REQUEST_BUDGETS_TABLE_NAME": BUDGETS_TABLE,
        "PROVIDER_API_KEY_PARAMETER": "/pg/provider-api-key",
        "PROVIDER_BASE_URL": provider_base_url,
        "PROVIDER_CONNECT_TIMEOUT_SECONDS": "0.5",
        "PROVIDER_CALL_DEADLINE_SECONDS": "1",
        "DEAD_LETTER_QUEUE_URL": os.environ["DEAD_LETTER_QUEUE_URL"],
        "CALLBACK_SECRET_ID": os.environ["CALLBACK_SECRET_ID"],
    }
    if function == "CompatResultFunction":
        del overrides["DEAD_LETTER_QUEUE_URL"], overrides["CALLBACK_SECRET_ID"]
    return template_environment(function, **overrides)


if __name__ == "__main__":
    main(sys.argv[1])
