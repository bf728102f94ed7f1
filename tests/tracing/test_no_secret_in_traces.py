"""Tracing as in Lambda sends no API key, callback secret or token to X-Ray, failures included.

The real poller and callback handlers run in a fresh interpreter with Powertools Tracer enabled
(POWERTOOLS_TRACE_DISABLED unset, a sampled _X_AMZN_TRACE_ID, LAMBDA_TASK_ROOT), their documents
sent to a fake X-Ray daemon on loopback UDP, while the provider endpoint fails while connecting.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from tests.integration.handler_support import API_KEY, SECRET, TOKEN
from tests.tracing.traced_compat_run import WORKER_KEY

ROOT = Path(__file__).resolve().parent.parent.parent
TRACE_HEADER = "Root=1-677e1a00-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"


class FakeXRayDaemon:
    """Collects every UDP datagram (one trace document each) sent to 127.0.0.1:<port>."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        self.address = f"127.0.0.1:{self._socket.getsockname()[1]}"
        self.documents: list[bytes] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)

    def __enter__(self) -> FakeXRayDaemon:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        self._thread.join(5)
        self._socket.close()

    def _receive(self) -> None:
        while not self._stopping.is_set():
            try:
                self.documents.append(self._socket.recv(65536))
            except TimeoutError:
                continue


@contextmanager
def refused_port() -> Iterator[str]:
    """A port nothing listens on: the connection is refused."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    yield f"https://127.0.0.1:{port}"


@contextmanager
def tcp_server(serve: Callable[[socket.socket], None]) -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    stopping = threading.Event()
    connections: list[socket.socket] = []

    def accept() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connections.append(connection)
            serve(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stopping.set()
        thread.join(5)
        for connection in connections:
            connection.close()
        listener.close()


def answer_plain_http(connection: socket.socket) -> None:
    """Answers the TLS ClientHello with plain HTTP: the TLS handshake fails."""
    connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nOK")


def never_answer(connection: socket.socket) -> None:
    """Accepts and stays silent: the TLS handshake times out."""


ENDPOINTS: dict[str, Callable[[], AbstractContextManager[str]]] = {
    "refused": refused_port,
    "plain_http_behind_https": lambda: tcp_server(answer_plain_http),
    "silent_during_handshake": lambda: tcp_server(never_answer),
}


def run_traced_handlers(
    provider_base_url: str, daemon_address: str, module: str = "tests.tracing.traced_run"
) -> str:
    environment = {
        key: value for key, value in os.environ.items() if key != "POWERTOOLS_TRACE_DISABLED"
    }
    environment.update(
        {
            "AWS_XRAY_DAEMON_ADDRESS": daemon_address,
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            "_X_AMZN_TRACE_ID": TRACE_HEADER,
            "LAMBDA_TASK_ROOT": str(ROOT / "functions"),
            "AWS_LAMBDA_FUNCTION_NAME": "pingback-guard-PollerFunction-TEST",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT)]),
        }
    )
    finished = subprocess.run(
        [sys.executable, "-m", module, provider_base_url],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    return finished.stdout + finished.stderr


@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS))
def test_no_trace_document_carries_a_secret_when_the_provider_fails_to_connect(
    endpoint: str,
) -> None:
    with FakeXRayDaemon() as daemon, ENDPOINTS[endpoint]() as base_url:
        output = run_traced_handlers(base_url, daemon.address)
    summary = json.loads(output.strip().splitlines()[-1])
    assert summary["poller"]["due"] == 2
    assert summary["poller"]["retryable_errors"] >= 1
    assert daemon.documents, "tracing was on: the daemon must have received documents"
    traced = b"".join(daemon.documents)
    assert b'"res.php get"' in traced  # the provider call is traced, by hand
    assert b'"name": "dynamodb"' in traced  # and the AWS calls, by the botocore patch
    for document in daemon.documents:
        text = document.decode("utf-8", "replace")
        assert API_KEY not in text
        assert SECRET not in text
        assert TOKEN[:40] not in text


def test_no_trace_log_or_metric_carries_a_worker_key() -> None:
    """in.php and res.php with a per-worker key: the key is in every request (form and query),
    and in no trace document, log line or metric (EMF) the handlers write."""
    with FakeXRayDaemon() as daemon, refused_port() as base_url:
        output = run_traced_handlers(base_url, daemon.address, "tests.tracing.traced_compat_run")
    summary = next(line for line in output.splitlines() if line.startswith('[{"status"'))
    answers = json.loads(summary)
    assert [answer["status"] for answer in answers] == [503, 503, 200, 200]
    assert '"CompatAnswered"' in output and '"in.php refused"' in output  # metrics and logs
    assert daemon.documents, "tracing was on: the daemon must have received documents"
    assert b'"name": "dynamodb"' in b"".join(daemon.documents)
    for text in [document.decode("utf-8", "replace") for document in daemon.documents] + [output]:
        assert WORKER_KEY not in text
        assert API_KEY not in text
