"""The real handlers, loaded in this process against moto, with the template's environment.

Handler modules create their boto3 clients when imported, from boto3's default session; the
local stack's call hooks (which count calls and, by a fault rule, take the table down) are
attached to that session first, so every client the handlers make carries them. The
benchmark's own clients come from a separate session and are never counted.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from unittest import mock

import boto3
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from bench.aws_counting import CallWindows
from bench.template_facts import HANDLER_FUNCTIONS
from infra.lambda_context import FakeLambdaContext
from infra.moto_atomic import make_dynamodb_writes_atomic
from infra.project_template import (
    create_tasks_table,
    functions_environment,
    parameter_default,
    project_template,
)

REGION = "us-east-1"
TABLE_NAME = "pingback-guard-bench-tasks"
CALLBACK_SECRET = "PgBenchCallbackSecret0000000000000000001"
STACK_NAME = "pingback-guard"
PUSH_API_ID = "benchpush01"
# What the Lambda runtime sets with active tracing; Powertools adds it to every log line.
TRACE_HEADER = "Root=1-677e1a00-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"
BENCH_OVERRIDES = {
    # Tasks become due for the poller, and likely solved to it, as early as 2captcha allows
    # (15 s for reCAPTCHA).
    "CALLBACK_TIMEOUT_SECONDS": "1",
    "EXPECTED_SOLVE_SECONDS": "5",
    # One sweep per invocation: the cost section prices a sweep; the schedule adds sweeps.
    "POLLER_RUN_SECONDS": "0",
    # Each handler runs when the bench calls it: a submit's wake of the poller and the poller's
    # helpers are invocations of their own that nothing here would run (section 6b measures the
    # wake on the local stack, section 9 the helpers).
    "POLLER_WAKE_ON_SUBMIT": "false",
    "POLLER_HELPERS": "0",
}


@dataclass
class InProcessStack:
    dynamodb: Any
    sqs: Any
    dead_letter_queue_url: str
    calls: CallWindows
    handlers: dict[str, ModuleType] = field(default_factory=dict)

    def context(self, handler: str) -> FakeLambdaContext:
        logical_id = HANDLER_FUNCTIONS[handler]
        return FakeLambdaContext(
            function_name=f"{STACK_NAME}-{logical_id}-Ab12Cd34Ef56",
            memory_limit_in_mb=256,
            timeout_seconds=60.0,
        )


@contextmanager
def in_process_stack(provider_url: str, provider_api_key: str) -> Iterator[InProcessStack]:
    make_dynamodb_writes_atomic()
    with mock_aws(), mock.patch.dict(os.environ, _process_environment()):
        os.environ.pop("AWS_ENDPOINT_URL", None)
        own = boto3.session.Session(region_name=REGION)
        physical_ids = _create_resources(own, provider_api_key)
        os.environ.update(_handler_environment(physical_ids, provider_url))
        boto3.setup_default_session(region_name=REGION)
        handler_session = boto3.DEFAULT_SESSION
        if handler_session is None:
            raise RuntimeError("boto3 has no default session")
        stack = InProcessStack(
            dynamodb=own.client("dynamodb"),
            sqs=own.client("sqs"),
            dead_letter_queue_url=physical_ids["DeadLetterQueue"],
            calls=CallWindows(),
        )
        stack.calls.hooks.attach(handler_session.events)
        parameters.clear_caches()
        try:
            stack.handlers = {name: _fresh_import(name) for name in HANDLER_FUNCTIONS}
            yield stack
        finally:
            for name in HANDLER_FUNCTIONS:
                sys.modules.pop(_module_name(name), None)
            parameters.clear_caches()


def _process_environment() -> dict[str, str]:
    return {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "_X_AMZN_TRACE_ID": TRACE_HEADER,
    }


def _create_resources(session: boto3.session.Session, provider_api_key: str) -> dict[str, str]:
    dynamodb = session.client("dynamodb")
    create_tasks_table(dynamodb, TABLE_NAME)
    sqs = session.client("sqs")
    queue_url = sqs.create_queue(QueueName=f"{STACK_NAME}-dead-letter")["QueueUrl"]
    secret_arn = session.client("secretsmanager").create_secret(
        Name=f"{STACK_NAME}-callback-secret",
        SecretString=json.dumps({"current": CALLBACK_SECRET, "previous": ""}),
    )["ARN"]
    session.client("ssm").put_parameter(
        Name=str(parameter_default(project_template(), "ProviderApiKeyParameterName")),
        Value=provider_api_key,
        Type="SecureString",
    )
    return {
        "TasksTable": TABLE_NAME,
        "DeadLetterQueue": queue_url,
        "CallbackSecret": secret_arn,
        # PushFunction's @connections endpoint (moto answers its Management API).
        "PushApi": PUSH_API_ID,
        "PushApiStage": "v1",
        # Named in the submits' environment; never invoked here (BENCH_OVERRIDES).
        "PollerFunction": f"{STACK_NAME}-PollerFunction-Ab12Cd34Ef56",
    }


def _handler_environment(physical_ids: Mapping[str, str], provider_url: str) -> dict[str, str]:
    merged = functions_environment(
        project_template(), HANDLER_FUNCTIONS.values(), physical_ids, REGION
    )
    return {**merged, **BENCH_OVERRIDES, "PROVIDER_BASE_URL": provider_url}


def _module_name(handler: str) -> str:
    return f"pingback_guard.handlers.{handler}"


def _fresh_import(handler: str) -> ModuleType:
    sys.modules.pop(_module_name(handler), None)
    return importlib.import_module(_module_name(handler))
