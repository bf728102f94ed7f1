"""A property-based fuzzer over the real in.php and res.php handlers, in this process (moto for
AWS, the provider on a closed loopback port): whatever a caller sends (any query string, any body
under any content type, built from the shapes that broke parsers before: escape floods, unclosed
strings, nesting, percent-encoding, boundaries, repeated keys, ids lists), the answer is the
protocol's (200, or 503 ERROR_NO_SLOT_AVAILABLE when the stack cannot answer now), never a 500
and never anything else. Bounded: a few hundred examples, seconds. Each request's CPU is handed to
Hypothesis as a target, so the search leans towards the costliest bodies."""

from __future__ import annotations

import base64
import importlib
import json
import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from infra.lambda_context import FakeLambdaContext
from infra.project_template import create_declared_table, functions_environment
from pingback_guard.domain.worker_keys import digest_of
from tests.integration.handler_support import TABLE
from tests.support import template

WORKER_KEY = "5ec7e7c0ffee5ec7e7c0ffee5ec7e7c0"
KEYS_TABLE = "pg-worker-keys"
BUDGETS_TABLE = "pg-request-budgets"
# The discard port on loopback, where nothing listens: a submit that reaches the provider is
# refused at once, and no request leaves this machine.
CLOSED_PROVIDER = "http://127.0.0.1:9"
# OK|<id>, a code (ids= joins them with "|"), or a balance.
PROTOCOL_ANSWER = re.compile(r"OK\|.+|[A-Z0-9_: |]+|\d+(\.\d+)?")

Handler = Callable[[dict[str, Any]], dict[str, Any]]

TOKENS = st.sampled_from(
    [
        "key",
        WORKER_KEY,
        "=",
        "&",
        "%",
        "%4",
        "%41",
        "%ZZ",
        "+",
        "\\",
        '\\"',
        '"',
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "json",
        "1",
        "action",
        "get",
        "ids",
        "id",
        "72000000001",
        "reportbad",
        "getbalance",
        "method",
        "userrecaptcha",
        "post",
        "file",
        "--b",
        "\r\n",
        'Content-Disposition: form-data; name="key"',
        "\u0100",
        "\udc80",
        "\x00",
    ]
)
TEXT = st.one_of(
    st.lists(TOKENS, max_size=40).map("".join),
    st.text(max_size=200),
    st.builds(lambda token, n: token * n, TOKENS, st.integers(0, 20_000)),
)
CONTENT_TYPES = st.sampled_from(
    [
        "",
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=b",
        "multipart/form-data; boundary=\u0100x",
        "multipart/form-data; boundary=" + "b" * 100,
        "multipart/form-data",
    ]
)


@pytest.fixture
def compat(
    stack: dict[str, Any], load: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Handler]:
    dynamodb = stack["dynamodb"]
    create_declared_table(dynamodb, "WorkerKeysTable", KEYS_TABLE)
    create_declared_table(dynamodb, "RequestBudgetsTable", BUDGETS_TABLE)
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
    secret = boto3.client("secretsmanager", region_name="us-east-1").describe_secret(
        SecretId="pg-callback-secret"
    )["ARN"]
    physical_ids = {
        "TasksTable": TABLE,
        "WorkerKeysTable": KEYS_TABLE,
        "RequestBudgetsTable": BUDGETS_TABLE,
        "DeadLetterQueue": stack["dlq"],
        "CallbackSecret": secret,
        "PollerFunction": "pg-poller",
    }
    env = functions_environment(
        template(), ("CompatSubmitFunction", "CompatResultFunction"), physical_ids, "us-east-1"
    )
    for name, value in {
        **env,
        "POLLER_WAKE_ON_SUBMIT": "false",
        "PROVIDER_BASE_URL": CLOSED_PROVIDER,
        # Room for every example: the budgets' refusals are their own tests'.
        "IN_PHP_BUDGET_PER_SECOND": "10000",
        "IN_PHP_BUDGET_PER_MINUTE": "10000",
        "RES_PHP_BUDGET_PER_SECOND": "10000",
        "RES_PHP_BUDGET_PER_MINUTE": "10000",
    }.items():
        monkeypatch.setenv(name, value)
    in_php, res_php = load("in_php"), load("res_php")
    # A container loads python-multipart at its first multipart body, once (the bench prints
    # what that costs): loaded here, so each example's CPU is the request's own.
    importlib.import_module("python_multipart.multipart")
    return {
        "in.php": lambda event: in_php.handler(event, FakeLambdaContext()),
        "res.php": lambda event: res_php.handler(event, FakeLambdaContext()),
    }


def request(
    route: str, query: str, body: bytes, content_type: str, encoded: bool
) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": f"POST /{route}",
        "rawPath": f"/{route}",
        "rawQueryString": query,
        "headers": {"content-type": content_type} if content_type else {},
        "requestContext": {
            "http": {"method": "POST", "path": f"/{route}", "sourceIp": "127.0.0.1"},
            "domainName": "api.test",
            "requestId": "fuzz",
        },
        "body": base64.b64encode(body).decode() if encoded else body.decode("utf-8", "replace"),
        "isBase64Encoded": encoded,
    }


def assert_protocol_answer(answer: dict[str, Any]) -> None:
    status, body = answer["statusCode"], answer["body"]
    assert status in {200, 503}, answer
    if answer["headers"]["content-type"].startswith("application/json"):
        document = json.loads(body)
        assert set(document) == {"status", "request"} and document["status"] in {0, 1}
        body = str(document["request"]) if document["status"] == 0 else "OK|x"
    assert status == 200 or body == "ERROR_NO_SLOT_AVAILABLE", answer
    assert PROTOCOL_ANSWER.fullmatch(body), answer


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    route=st.sampled_from(["in.php", "res.php"]),
    query=TEXT,
    body=TEXT,
    content_type=CONTENT_TYPES,
    encoded=st.booleans(),
)
def test_any_request_gets_the_protocol_s_answer_never_a_500(
    compat: dict[str, Handler],
    route: str,
    query: str,
    body: str,
    content_type: str,
    encoded: bool,
) -> None:
    raw = body.encode("utf-8", "surrogatepass")
    started = time.process_time()
    answer = compat[route](request(route, query, raw, content_type, encoded))
    # Recorded, not asserted (bench/hostile_input.py prints the figures): Hypothesis steers its
    # search towards the costliest requests, and --hypothesis-show-statistics shows the highest.
    target((time.process_time() - started) * 1000, label="CPU ms per request")
    assert_protocol_answer(answer)
