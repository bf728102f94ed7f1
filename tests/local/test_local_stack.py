"""The local runtime, end to end on the fixture template (moto, workers, gateway, triggers)."""

import base64
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
from botocore.credentials import Credentials

from infra.local import FaultRule, LocalStack
from infra.local.runtime.aws import ACCOUNT_ID, OTHER_WORKER, WORKER
from pingback_guard_client.signing import SigV4RequestAuth
from tests.local.support import LEAK_SENTINEL, PROVIDER_API_KEY
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(180)]

Aws = Callable[[str], Any]
WRONG_KEY = Credentials(WORKER.access_key, "not-the-secret-key", WORKER.session_token)


def _echo(stack: LocalStack, query: str = "", **kwargs: Any) -> dict[str, Any]:
    response = requests.get(f"{stack.ready.api_url}/echo/someone{query}", timeout=10, **kwargs)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def _items(aws: Aws, table: str, prefix: str) -> list[dict[str, Any]]:
    items = aws("dynamodb").scan(TableName=table)["Items"]
    return [item for item in items if item["task_id"]["S"].startswith(prefix)]


def _control(stack: LocalStack, method: str, path: str, document: Any = None) -> Any:
    response = requests.request(
        method, f"{stack.ready.control_url}/_local/{path}", json=document, timeout=30
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_resources_get_the_template_names_and_settings(local_stack: LocalStack, aws: Aws) -> None:
    ready = local_stack.ready
    assert ready.tasks_table is not None
    assert ready.tasks_table.startswith("fixture-ItemsTable-")
    table = aws("dynamodb").describe_table(TableName=ready.tasks_table)["Table"]
    assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["ByDue"]
    ttl = aws("dynamodb").describe_time_to_live(TableName=ready.tasks_table)
    assert ttl["TimeToLiveDescription"]["AttributeName"] == "expires_at"
    assert ready.dlq_url is not None
    assert "fixture-WorkQueue-" in ready.dlq_url
    attributes = aws("sqs").get_queue_attributes(QueueUrl=ready.dlq_url, AttributeNames=["All"])
    redrive = json.loads(attributes["Attributes"]["RedrivePolicy"])
    assert redrive["maxReceiveCount"] == 2
    assert ready.parking_queue_url is not None
    assert redrive["deadLetterTargetArn"].endswith(ready.parking_queue_url.rsplit("/", 1)[1])
    secret = aws("secretsmanager").get_secret_value(SecretId=ready.outputs["SharedSecretArn"])
    assert set(json.loads(secret["SecretString"])) == {"current", "previous"}
    alarm = aws("cloudwatch").describe_alarms()["MetricAlarms"][0]
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": ready.dlq_url.rsplit("/", 1)[1]}]
    assert ready.resources["TickFunctionEveryMinute"]["origin"] == "api"
    assert ready.outputs["ApiUrl"] == ready.api_url


def test_provider_api_key_is_stored_and_never_printed(local_stack: LocalStack, aws: Aws) -> None:
    parameter = aws("ssm").get_parameter(Name="/fixture/provider-api-key", WithDecryption=True)
    assert parameter["Parameter"]["Type"] == "SecureString"
    assert parameter["Parameter"]["Value"] == PROVIDER_API_KEY
    assert PROVIDER_API_KEY not in json.dumps(local_stack.ready.to_json())


def test_route_gets_a_payload_format_2_event(local_stack: LocalStack) -> None:
    document = _echo(
        local_stack, "%20x?a=1&a=2&b=", headers={"X-Custom": "yes", "Cookie": "c1=v1; c2=v2"}
    )
    event = document["event"]
    assert event["version"] == "2.0"
    assert event["routeKey"] == "GET /echo/{name}"
    assert event["rawPath"] == "/echo/someone%20x"
    assert event["rawQueryString"] == "a=1&a=2&b="
    assert event["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert event["pathParameters"] == {"name": "someone x"}
    assert event["headers"]["x-custom"] == "yes"
    assert event["cookies"] == ["c1=v1", "c2=v2"]
    assert event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["http"]["method"] == "GET"
    assert context["http"]["path"] == "/echo/someone%20x"
    assert context["http"]["sourceIp"] == "127.0.0.1"
    assert context["http"]["userAgent"].startswith("python-requests")
    assert context["stage"] == "$default"
    assert context["domainName"] == local_stack.ready.api_url.removeprefix("http://")
    assert context["apiId"] == local_stack.ready.resources["FixtureApi"]["physical_id"]
    assert abs(context["timeEpoch"] / 1000 - time.time()) < 30
    assert "authorizer" not in context


def test_bodies_are_encoded_as_api_gateway_does(local_stack: LocalStack) -> None:
    url = f"{local_stack.ready.api_url}/echo/someone"
    as_json = requests.post(url, json={"id": "1"}, timeout=10).json()["event"]
    assert as_json["body"] == '{"id": "1"}'
    assert as_json["isBase64Encoded"] is False
    form = requests.post(url, data={"id": "1", "code": "t"}, timeout=10).json()["event"]
    assert form["isBase64Encoded"] is True
    assert base64.b64decode(form["body"]) == b"id=1&code=t"


def test_iam_routes_verify_sigv4_and_pass_the_caller_on(local_stack: LocalStack) -> None:
    url = f"{local_stack.ready.api_url}/shaped"
    unsigned = requests.get(url, timeout=10)
    assert (unsigned.status_code, unsigned.json()) == (403, {"message": "Forbidden"})
    wrongly_signed = requests.get(url, timeout=10, auth=SigV4RequestAuth("us-east-1", WRONG_KEY))
    assert wrongly_signed.status_code == 403
    for principal in (WORKER, OTHER_WORKER):
        response = local_stack.ready.signed_session(principal).get(url, timeout=10)
        assert response.status_code == 200
        iam = response.json()["event"]["requestContext"]["authorizer"]["iam"]
        assert (iam["accessKey"], iam["userArn"]) == (principal.access_key, principal.user_arn)
        assert iam["accountId"] == ACCOUNT_ID and iam["userId"] == iam["callerId"] != ""


def test_results_and_errors_map_like_api_gateway(local_stack: LocalStack) -> None:
    api = local_stack.ready.api_url
    shaped = requests.get(f"{api}/echo/someone", timeout=10)
    assert shaped.headers["x-fixture"] == "echo"
    assert "apigw-requestid" in shaped.headers
    plain = requests.get(f"{api}/echo/someone?plain=1", timeout=10)
    assert (plain.status_code, plain.json()) == (200, {"plain": True})
    assert plain.headers["content-type"] == "application/json"
    failed = requests.get(f"{api}/echo/someone?raise=1", timeout=10)
    assert (failed.status_code, failed.json()) == (500, {"message": "Internal Server Error"})
    missing = requests.get(f"{api}/nowhere", timeout=10)
    assert (missing.status_code, missing.json()) == (404, {"message": "Not Found"})
    wrong_method = requests.delete(f"{api}/echo/someone", timeout=10)
    assert wrong_method.status_code == 404
    too_large = requests.post(f"{api}/echo/someone", data=b"x" * (10 * 1024 * 1024 + 1), timeout=30)
    assert too_large.status_code == 413


def test_functions_get_exactly_the_template_environment(local_stack: LocalStack) -> None:
    ready = local_stack.ready
    document = _echo(local_stack)
    environment = document["environment"]
    assert environment["ITEMS_TABLE_NAME"] == ready.tasks_table
    assert environment["FLAVOUR"] == "chocolate"
    assert environment["SECRET_ID"] == ready.outputs["SharedSecretArn"]
    assert environment["WORK_QUEUE_URL"] == ready.dlq_url
    assert environment["API_KEY_PARAMETER"] == "/fixture/provider-api-key"
    assert environment["GREETING"] == "hello from us-east-1"
    assert environment["AWS_ENDPOINT_URL"] == ready.aws_endpoint_url
    assert (
        environment["AWS_LAMBDA_FUNCTION_NAME"] == ready.functions["EchoFunction"]["function_name"]
    )
    assert environment["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "256"
    assert environment["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert environment["PYTHONPATH"].endswith("fixtures/handlers")
    assert LEAK_SENTINEL not in environment
    context = document["context"]
    assert context["function_name"] == environment["AWS_LAMBDA_FUNCTION_NAME"]
    assert context["memory_limit_in_mb"] == 256
    assert context["invoked_function_arn"].endswith(f":function:{context['function_name']}")
    assert 0 < context["remaining_ms"] <= 3000


def test_schedule_fires_with_a_scheduler_event(local_stack: LocalStack, aws: Aws) -> None:
    table = local_stack.ready.tasks_table
    assert table is not None
    ticks = wait_until(lambda: _items(aws, table, "tick-"), timeout=15)
    assert ticks[0]["source"]["S"] == "aws.scheduler"
    assert ticks[0]["detail_type"]["S"] == "Scheduled Event"


def test_partial_batch_failure_retries_then_parks(local_stack: LocalStack, aws: Aws) -> None:
    ready = local_stack.ready
    assert ready.tasks_table is not None
    assert ready.dlq_url is not None
    assert ready.parking_queue_url is not None
    good, bad = f"good-{uuid.uuid4()}", f"bad-{uuid.uuid4()}"
    sqs = aws("sqs")
    sqs.send_message(QueueUrl=ready.dlq_url, MessageBody=json.dumps({"task_id": good}))
    sqs.send_message(QueueUrl=ready.dlq_url, MessageBody=json.dumps({"task_id": bad, "fail": True}))

    def parked() -> list[dict[str, Any]]:
        messages = sqs.receive_message(QueueUrl=ready.parking_queue_url, WaitTimeSeconds=1)
        return list(messages.get("Messages", []))

    parked_messages = wait_until(parked, timeout=30)
    assert json.loads(parked_messages[0]["Body"])["task_id"] == bad
    assert _items(aws, ready.tasks_table, good)
    seen_bad = {item["task_id"]["S"] for item in _items(aws, ready.tasks_table, f"seen-{bad}")}
    assert seen_bad == {f"seen-{bad}-1", f"seen-{bad}-2"}
    seen_good = _items(aws, ready.tasks_table, f"seen-{good}")
    assert [item["task_id"]["S"] for item in seen_good] == [f"seen-{good}-1"]
    assert seen_good[0]["source_arn"]["S"].endswith(ready.dlq_url.rsplit("/", 1)[1])


def test_a_crashed_worker_is_a_500_and_is_replaced(local_stack: LocalStack) -> None:
    api = local_stack.ready.api_url
    crashed = requests.get(f"{api}/echo/someone?crash=1", timeout=10)
    assert (crashed.status_code, crashed.json()) == (500, {"message": "Internal Server Error"})
    for _ in range(4):
        assert requests.get(f"{api}/echo/someone", timeout=10).status_code == 200
    assert local_stack.health()["functions"]["EchoFunction"]["discarded_workers"] >= 1


ECHO_SLEEP_SECONDS = 20


def test_timeout_kills_the_invocation(local_stack: LocalStack) -> None:
    started = time.monotonic()
    invocation = _control(
        local_stack,
        "POST",
        "invoke/EchoFunction",
        {"queryStringParameters": {"sleep": str(ECHO_SLEEP_SECONDS)}},
    )
    assert invocation["error"]["errorType"] == "Sandbox.Timedout"
    # Killed at the function's Timeout (3 s), not after the sleep it asked for.
    assert 2.9 < time.monotonic() - started < ECHO_SLEEP_SECONDS
    assert _control(local_stack, "POST", "invoke/EchoFunction", {})["ok"] is True


def test_fault_rule_fails_dynamodb_inside_the_worker_until_it_expires(
    local_stack: LocalStack,
) -> None:
    url = f"{local_stack.ready.api_url}/items/fault-{uuid.uuid4()}"

    def unavailable_for(seconds: float) -> dict[str, object]:
        return {
            "function": "ItemsFunction",
            "service": "dynamodb",
            "operation": "UpdateItem",
            "mode": "unavailable",
            "until": time.time() + seconds,
        }

    # A rule that outlives make test's slowest request; only the last one is meant to expire.
    _control(local_stack, "POST", "faults", [unavailable_for(60)])
    try:
        failing = local_stack.ready.signed_session().put(url, data="x", timeout=10)
        assert (failing.status_code, failing.json()) == (503, {"error": "EndpointConnectionError"})
        local_stack.set_faults([FaultRule(mode="throttle", function="ItemsFunction")])
        throttled = local_stack.ready.signed_session().put(url, data="x", timeout=10).json()
        assert throttled == {"error": "ProvisionedThroughputExceededException"}
        _control(local_stack, "POST", "faults", [unavailable_for(3)])
        wait_until(
            lambda: (
                local_stack.ready.signed_session().put(url, data="x", timeout=10).status_code == 200
            ),
            timeout=20,
        )
    finally:
        _control(local_stack, "DELETE", "faults")


def test_crash_fault_ends_the_worker_before_the_write(local_stack: LocalStack) -> None:
    task_id = f"crash-{uuid.uuid4()}"
    local_stack.set_faults([FaultRule(mode="crash", function="ItemsFunction", service="dynamodb")])
    try:
        response = local_stack.ready.signed_session().put(
            f"{local_stack.ready.api_url}/items/{task_id}", timeout=10
        )
        assert response.status_code == 500
    finally:
        local_stack.set_faults([])
    calls = [call for call in local_stack.calls_report()["calls"] if task_id in call["task_ids"]]
    assert [(call["outcome"], call["injected"]) for call in calls] == [("WorkerCrashed", "crash")]


def test_call_accounting_counts_writes_without_values(local_stack: LocalStack) -> None:
    before = local_stack.calls_report()["last_sequence"]
    task_id = f"counted-{uuid.uuid4()}"
    token = "token-value-that-must-not-leak"
    response = local_stack.ready.signed_session().put(
        f"{local_stack.ready.api_url}/items/{task_id}", data=token, timeout=10
    )
    assert response.status_code == 200
    report = _control(local_stack, "GET", f"calls?since={before}")
    writes = [call for call in report["calls"] if task_id in call["task_ids"]]
    assert len(writes) == 1
    write = writes[0]
    assert (write["function"], write["service"], write["operation"], write["outcome"]) == (
        "ItemsFunction",
        "dynamodb",
        "UpdateItem",
        "ok",
    )
    assert write["table"] == local_stack.ready.tasks_table
    assert write["update_expression"] == "SET #payload = :payload"
    assert write["request_id"]
    assert token not in json.dumps(report)
    assert any(count["operation"] == "UpdateItem" for count in report["counts"])


def test_gateway_down_refuses_connections_until_it_is_up(local_stack: LocalStack) -> None:
    url = f"{local_stack.ready.api_url}/echo/someone"
    _control(local_stack, "POST", "gateway", {"up": False})
    try:
        with pytest.raises(requests.ConnectionError):
            requests.get(url, timeout=5)
        assert local_stack.health()["gateway_up"] is False
    finally:
        _control(local_stack, "POST", "gateway", {"up": True})
    assert requests.get(url, timeout=10).status_code == 200


def test_control_api_rejects_bad_requests(local_stack: LocalStack) -> None:
    control = f"{local_stack.ready.control_url}/_local"
    assert requests.post(f"{control}/invoke/NoSuchFunction", json={}, timeout=10).status_code == 404
    bad_rule = requests.post(f"{control}/faults", json=[{"mode": "explode"}], timeout=10)
    assert bad_rule.status_code == 400
    assert requests.post(f"{control}/gateway", json={"up": "yes"}, timeout=10).status_code == 400
    assert requests.get(f"{control}/health", timeout=10).json()["status"] == "ok"
