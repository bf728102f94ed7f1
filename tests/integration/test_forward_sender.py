"""HttpForwardSender against servers on 127.0.0.1 (the only address it is given here): it connects
to the address it is handed, verifies TLS against the URL's host name, and a hostile worker server
holds it no longer than one deadline and feeds it no more than a bounded reply."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from infra.local.apigateway.tls import make_test_certificates
from pingback_guard.domain.errors import ForwardFailedError
from pingback_guard.forward.sender import HttpForwardSender

pytestmark = pytest.mark.timeout(60)

LOOPBACK = [ipaddress.ip_address("127.0.0.1")]
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK"
Answer = Callable[[socket.socket], None]


@dataclass
class WorkerServer:
    """One worker's pingback server: each connection's request is kept, then ``answer`` replies."""

    answer: Answer
    tls: ssl.SSLContext | None = None
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # the listener was closed: the test is over
            self.connections += 1
            # OSError: the sender hung up (a deadline, a budget) or refused the certificate.
            with connection, contextlib.suppress(OSError):
                self._exchange(connection)

    def _exchange(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        if self.tls is not None:
            connection = self.tls.wrap_socket(connection, server_side=True)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(4096)
            if not chunk:
                return
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += connection.recv(4096)
        self.requests.append(head + b"\r\n\r\n" + body)
        self.answer(connection)


@contextmanager
def worker_server(
    answer: Answer, tls: ssl.SSLContext | None = None
) -> Iterator[tuple[int, WorkerServer]]:
    server = WorkerServer(answer, tls)
    listener = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve, args=(listener,), daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], server
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=20)
        assert not thread.is_alive()


def reply(data: bytes) -> Answer:
    return lambda connection: connection.sendall(data)


def drip(data: bytes, pause: float) -> Answer:
    """Each byte alone, ``pause`` seconds apart: every read gets something well within any
    per-read timeout."""

    def answer(connection: socket.socket) -> None:
        for byte in data:
            connection.sendall(bytes([byte]))
            time.sleep(pause)

    return answer


def test_the_form_goes_to_the_given_address_with_the_url_s_host_path_and_query() -> None:
    # worker.test is never resolved (a reserved name): the sender connects to the address given.
    with worker_server(reply(OK)) as (port, server):
        HttpForwardSender().send(
            f"http://worker.test:{port}/done?fleet=a", LOOPBACK, "72000000001", "P1_token+/="
        )
    [request] = server.requests
    head, _, body = request.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /done?fleet=a HTTP/1.1"
    assert f"Host: worker.test:{port}" in lines
    assert "Content-Type: application/x-www-form-urlencoded" in lines
    assert parse_qs(body.decode()) == {"id": ["72000000001"], "code": ["P1_token+/="]}


def test_the_next_address_is_tried_when_one_refuses_and_the_path_is_quoted_as_requests_would() -> (
    None
):
    # The server listens on 127.0.0.1 only: ::1 refuses (or is unreachable without IPv6).
    both = [ipaddress.ip_address("::1"), *LOOPBACK]
    with worker_server(reply(OK)) as (port, server):
        HttpForwardSender().send(f"http://worker.test:{port}/café done?a=%2F&b=é", both, "1", "t")
    [request] = server.requests
    assert request.startswith(b"POST /caf%C3%A9%20done?a=%2F&b=%C3%A9 HTTP/1.1\r\n")


def test_https_verifies_the_certificate_against_the_url_s_host_name(tmp_path: Path) -> None:
    certificates = make_test_certificates(tmp_path)  # for localhost and 127.0.0.1
    trusting = ssl.create_default_context(cafile=str(certificates.ca_bundle))
    sender = HttpForwardSender(trusting)
    with worker_server(reply(OK), certificates.server_context()) as (port, server):
        sender.send(f"https://localhost:{port}/p", LOOPBACK, "1", "token")
        # The same address, another name: the certificate does not cover it.
        with pytest.raises(ForwardFailedError, match="SSLCertVerificationError"):
            sender.send(f"https://worker.test:{port}/p", LOOPBACK, "1", "token")
    assert server.connections == 2 and len(server.requests) == 1


def test_a_reply_dripped_past_the_deadline_fails_however_fast_each_read_is() -> None:
    sender = HttpForwardSender(deadline_seconds=0.5)
    with (
        worker_server(drip(OK, pause=0.05)) as (port, _),  # about 3 s in all
        pytest.raises(ForwardFailedError, match=r"ForwardDeadlinePassed|TimeoutError"),
    ):
        sender.send(f"http://worker.test:{port}/p", LOOPBACK, "1", "token")


def test_a_2xx_is_taken_from_its_status_line_the_body_is_never_read() -> None:
    endless = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n" + b"x" * 4096
    with worker_server(drip(endless, pause=0.01)) as (port, _):
        HttpForwardSender(deadline_seconds=5).send(
            f"http://worker.test:{port}/p", LOOPBACK, "1", "token"
        )


def test_a_reply_head_past_the_byte_budget_fails() -> None:
    flood = b"HTTP/1.1 200 OK\r\n" + b"X-Padding: " + b"p" * 4000 + b"\r\n" * 2
    with (
        worker_server(reply(flood)) as (port, _),
        pytest.raises(ForwardFailedError, match="ReplyTooLarge"),
    ):
        HttpForwardSender(max_reply_bytes=1024).send(
            f"http://worker.test:{port}/p", LOOPBACK, "1", "token"
        )


@pytest.mark.parametrize(
    "status", [b"500 Internal Server Error", b"302 Found\r\nLocation: http://127.0.0.1:1/"]
)
def test_anything_but_a_2xx_is_a_failure_that_names_neither_url_nor_code(status: bytes) -> None:
    answer = b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n"
    with (
        worker_server(reply(answer)) as (port, server),
        pytest.raises(ForwardFailedError) as failure,
    ):
        HttpForwardSender().send(f"http://worker.test:{port}/p", LOOPBACK, "1", "P1_secret")
    assert "worker.test" not in str(failure.value) and "P1_secret" not in str(failure.value)
    assert len(server.requests) == 1  # the redirect is not followed
