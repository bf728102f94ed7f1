"""Issue 31 item 6 (client side): a worker whose IAM policy lacks execute-api:Invoke on the push
API's $connect gets 403 there; the client waited by paced GETs with no sign of why. It now says
so once (a warning naming the missing permission, and ``push.refused``) and still waits by GET."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from botocore.credentials import Credentials
from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus
from websockets.http11 import Response

from pingback_guard_client import Client, RetryPolicy
from pingback_guard_client.push import PushChannel
from tests.client.fake_transport import FakeClock, FakeTransport, solved

PUSH_URL = "wss://abc123.execute-api.us-east-1.amazonaws.com/v1"


class RefusingConnect:
    """websockets' connect() against an API Gateway that answers $connect with ``status``."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.attempts = 0
        self.tried = threading.Event()

    def __call__(self, url: str, **options: Any) -> Any:
        self.attempts += 1
        self.tried.set()
        body = b'{"message":"Forbidden"}'
        raise InvalidStatus(Response(self.status, "Forbidden", Headers(), body))


def refused_client(connect: RefusingConnect, *answers: Any) -> tuple[Client, FakeTransport]:
    transport, clock = FakeTransport(list(answers)), FakeClock()
    client = Client(
        "https://abc123.execute-api.us-east-1.amazonaws.com",
        region="us-east-1",
        transport=transport,
        retry=RetryPolicy(attempts=3, base_seconds=1, max_seconds=4),
        clock=clock.time,
        sleep=clock.sleep,
    )
    client.push = PushChannel(
        PUSH_URL, "us-east-1", Credentials("AKIDEXAMPLE", "secret"), connector=connect
    )
    return client, transport


def test_a_403_at_connect_is_said_once_and_the_wait_goes_on_by_get(
    caplog: pytest.LogCaptureFixture,
) -> None:
    connect = RefusingConnect(403)
    client, transport = refused_client(connect, solved(1_000_000.0))
    with caplog.at_level(logging.WARNING, logger="pingback_guard_client.push"), client:
        solution = client.wait("42", timeout=60)
        assert client.push is not None
        refused = client.push.refused
        assert refused is not None and "execute-api:Invoke" in refused and "$connect" in refused
        assert not client.push.connected
    assert solution.token == "03AGdBq2-token"
    assert [method for method, _, _ in transport.requests] == ["GET"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "execute-api:Invoke" in warnings[0]


def test_a_connection_that_fails_otherwise_is_not_called_refused() -> None:
    connect = RefusingConnect(502)
    client, _ = refused_client(connect, solved(1_000_000.0))
    with client:
        client.wait("42", timeout=60)
        assert client.push is not None and client.push.refused is None
