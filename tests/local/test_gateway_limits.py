"""The local gateways refuse what API Gateway and Lambda refuse, where they do (docs/aws-limits.md):
real requests to a loopback gateway whose function is a fake, so each refusal shows whether the
function ran."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from infra.local.apigateway.gateway import HttpGateway, lambda_payload_bytes
from infra.local.apigateway.http_api import ApiContext, RouteTable
from infra.local.apigateway.limits import (
    HTTP_API_REQUEST_LINE_AND_HEADERS_BYTES,
    LAMBDA_SYNC_PAYLOAD_BYTES,
    WEBSOCKET_FRAME_BYTES,
    WEBSOCKET_MESSAGE_BYTES,
)
from infra.local.apigateway.websocket_api import (
    LocalWebSocketApi,
    WebSocketApiSpec,
    WebSocketRoute,
)
from infra.local.events.event_bus import PUT_EVENTS_ENTRY_BYTES, BusEntry, LocalEventBus
from infra.local.events.event_patterns import parse_pattern
from infra.local.events.event_sources import RuleSpec
from infra.local.lambda_.pool import Invocation
from infra.local.lambda_.triggers import HttpRoute
from infra.local.runtime.aws import FAKE_CREDENTIALS

FORM = {"content-type": "application/x-www-form-urlencoded"}


class FakeFunction:
    """Answers 200 after `delay` seconds; records each event it was invoked with."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.events: list[Any] = []
        self.finished = threading.Event()

    def __call__(self, function: str, event: Any) -> Invocation:
        self.events.append(event)
        time.sleep(self.delay)
        self.finished.set()
        return Invocation("r", {"statusCode": 200, "body": "ran"})


@pytest.fixture
def function() -> FakeFunction:
    return FakeFunction()


def serve(function: FakeFunction, integration_timeout: float = 30.0) -> HttpGateway:
    routes = [
        HttpRoute("api", method, "/callback/{secret}", "Callback", iam_auth=False)
        for method in ("GET", "POST")
    ]
    gateway = HttpGateway(
        RouteTable(routes),
        function,
        ApiContext(account_id="123456789012"),
        0,
        io.StringIO(),
        integration_timeout=integration_timeout,
    )
    gateway.set_up(True)
    return gateway


@pytest.fixture
def gateway(function: FakeFunction) -> Iterator[HttpGateway]:
    gateway = serve(function)
    yield gateway
    gateway.set_up(False)


def pingback_url(gateway: HttpGateway, answer: str) -> str:
    query = urllib.parse.urlencode({"id": "7312345678", "code": answer})
    return f"{gateway.url}/callback/s3cr3t?{query}"


def test_a_get_pingback_over_the_request_line_quota_never_reaches_the_function(
    gateway: HttpGateway, function: FakeFunction
) -> None:
    cyrillic = "Ж" * 2048  # 4 KB of UTF-8, about 12 KB percent-encoded
    refused = requests.get(pingback_url(gateway, cyrillic), timeout=10)
    assert refused.status_code == 413
    assert function.events == []
    delivered = requests.get(pingback_url(gateway, "Ж" * 1024), timeout=10)
    assert (delivered.status_code, delivered.text) == (200, "ran")
    assert function.events[0]["queryStringParameters"]["code"] == "Ж" * 1024


def test_the_quota_counts_the_request_line_and_header_values(
    gateway: HttpGateway, function: FakeFunction
) -> None:
    url = f"{gateway.url}/callback/s"
    padding = {"x-padding": "p" * (HTTP_API_REQUEST_LINE_AND_HEADERS_BYTES - 200)}
    assert requests.get(url, headers=padding, timeout=10).status_code == 200
    padding = {"x-padding": "p" * HTTP_API_REQUEST_LINE_AND_HEADERS_BYTES}
    assert requests.get(url, headers=padding, timeout=10).status_code == 413
    assert len(function.events) == 1


def test_a_body_lambda_refuses_once_base64_encoded_is_a_bare_500_and_the_function_never_runs(
    gateway: HttpGateway, function: FakeFunction
) -> None:
    """in.php's form bodies between about 4.5 and 10 MB: within HTTP API's payload quota, over
    Lambda's once API Gateway base64-encodes them (docs/api-errors.md)."""
    url = f"{gateway.url}/callback/s"
    over = b"body=" + b"A" * (LAMBDA_SYNC_PAYLOAD_BYTES * 3 // 4)
    refused = requests.post(url, data=over, headers=FORM, timeout=30)
    assert (refused.status_code, refused.json()) == (500, {"message": "Internal Server Error"})
    assert function.events == []
    within = b"body=" + b"A" * (LAMBDA_SYNC_PAYLOAD_BYTES * 3 // 4 - 64 * 1024)
    assert requests.post(url, data=within, headers=FORM, timeout=30).status_code == 200
    assert base64.b64decode(function.events[0]["body"]) == within
    assert lambda_payload_bytes(function.events[0]) <= LAMBDA_SYNC_PAYLOAD_BYTES


def test_a_function_slower_than_the_integration_timeout_answers_503_and_runs_on() -> None:
    slow = FakeFunction(delay=1.0)
    gateway = serve(slow, integration_timeout=0.2)
    try:
        answered = requests.get(f"{gateway.url}/callback/s", timeout=10)
        assert (answered.status_code, answered.json()) == (503, {"message": "Service Unavailable"})
        assert not slow.finished.is_set()
        assert slow.finished.wait(5)
    finally:
        gateway.set_up(False)


# ------------------------------------------------------------ WebSocket API


class EchoRoute:
    """A $default route's function that accepts every connection and message."""

    def __call__(self, function: str, event: Any) -> Invocation:
        return Invocation("r", {"statusCode": 200})


@pytest.fixture
def websocket_api() -> Iterator[LocalWebSocketApi]:
    routes = {key: WebSocketRoute(key, "Push", iam_auth=False) for key in ("$connect", "$default")}
    spec = WebSocketApiSpec("PushApi", "push1", "v1", routes)
    api = LocalWebSocketApi(spec, EchoRoute(), ApiContext(account_id="123456789012"))
    api.start()
    yield api
    api.stop()


def management_client(api: LocalWebSocketApi) -> Any:
    return boto3.client(
        "apigatewaymanagementapi",
        endpoint_url=api.management_url,
        region_name="us-east-1",
        aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )


def test_a_post_over_the_message_quota_is_payload_too_large_and_a_long_one_comes_in_frames(
    websocket_api: LocalWebSocketApi,
) -> None:
    with connect(websocket_api.url) as worker:
        deadline = time.monotonic() + 5
        while not websocket_api.connection_ids() and time.monotonic() < deadline:
            time.sleep(0.01)
        (connection_id,) = websocket_api.connection_ids()
        management = management_client(websocket_api)
        with pytest.raises(ClientError) as refused:
            management.post_to_connection(
                ConnectionId=connection_id, Data=b"x" * (WEBSOCKET_MESSAGE_BYTES + 1)
            )
        assert refused.value.response["Error"]["Code"] == "PayloadTooLargeException"
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
        long = json.dumps({"answer": "Ж" * WEBSOCKET_FRAME_BYTES}, ensure_ascii=False)
        management.post_to_connection(ConnectionId=connection_id, Data=long.encode())
        fragments = list(worker.recv_streaming())
        assert "".join(str(f) for f in fragments) == long
        assert len(fragments) > 1
        assert all(len(str(f).encode()) <= WEBSOCKET_FRAME_BYTES for f in fragments)


def test_a_client_message_over_the_message_quota_closes_the_connection_with_1009(
    websocket_api: LocalWebSocketApi,
) -> None:
    with connect(websocket_api.url, max_size=None) as worker:
        worker.send("x" * (WEBSOCKET_MESSAGE_BYTES + 1))
        with pytest.raises(ConnectionClosed) as closed:
            worker.recv(timeout=5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


# ------------------------------------------------------------ EventBridge


def test_an_entry_over_the_put_events_limit_is_refused_and_never_delivered() -> None:
    delivered = FakeFunction()
    rule = RuleSpec(
        "Results", "results", "arn:rule", "bus", parse_pattern({"source": ["p"]}), ("Push",)
    )
    bus = LocalEventBus([rule], delivered, region="us-east-1")
    bus.start()
    try:
        big = BusEntry("bus", "p", "Task Result", {"answer": "x" * PUT_EVENTS_ENTRY_BYTES})
        small = BusEntry("bus", "p", "Task Result", {"answer": "x"})
        ids = bus.put_events([big, small])
        assert len(ids) == 1 and bus.stats.put == 1
        assert [event["id"] for event in bus.published()] == ids
        assert delivered.finished.wait(5)
        assert [event["detail"] for event in delivered.events] == [{"answer": "x"}]
    finally:
        bus.stop(5)
