"""HTTP front of the simulator: in.php, res.php and the /_sim/ control endpoints."""

from __future__ import annotations

import base64
import email
import email.policy
import http
import json
import logging
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from infra.simulator.config import ConfigError
from infra.simulator.faults import FaultControl
from infra.simulator.plan import RequestRate
from infra.simulator.provider import Answer, Provider
from infra.simulator.stats import Counters
from infra.simulator.tasks import TaskRegistry

logger = logging.getLogger(__name__)

# BLS sends nine images of up to 100 kB, base64.
MAX_BODY_BYTES: Final = 2_000_000
JSON_TYPE: Final = "application/json"
TEXT_TYPE: Final = "text/plain; charset=utf-8"
JSON_FLAGS: Final = frozenset({"1", "true"})
PROVIDER_PATHS: Final = frozenset({"/in.php", "/res.php"})
TOO_MANY_REQUESTS: Final = http.HTTPStatus.TOO_MANY_REQUESTS


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: Mapping[str, str]
    body: bytes
    content_type: str = ""


@dataclass(frozen=True)
class HttpReply:
    status: int
    body: str
    content_type: str = TEXT_TYPE

    @classmethod
    def of_json(cls, value: Any, status: int = 200) -> HttpReply:
        return cls(status, json.dumps(value), JSON_TYPE)


class SimulatorApp:
    """Maps requests to the provider (in.php, res.php) and to the control endpoints."""

    def __init__(
        self,
        provider: Provider,
        faults: FaultControl,
        registry: TaskRegistry,
        counters: Counters,
        rate: RequestRate,
        pause: Callable[[float], object],
    ) -> None:
        self._provider = provider
        self._rate = rate
        self._faults = faults
        self._registry = registry
        self._counters = counters
        self._pause = pause
        self._control: Mapping[tuple[str, str], Callable[[HttpRequest], HttpReply]] = {
            ("GET", "/_sim/tasks"): self._tasks,
            ("GET", "/_sim/stats"): self._stats,
            ("GET", "/_sim/faults"): self._current_faults,
            ("POST", "/_sim/faults"): self._update_faults,
        }

    def handle(self, request: HttpRequest) -> HttpReply:
        if request.path in PROVIDER_PATHS and not self._rate.admit(time.time()):
            self._counters.add("plan", "rate_limited")
            return HttpReply(TOO_MANY_REQUESTS, TOO_MANY_REQUESTS.phrase)
        if request.path == "/in.php":
            return self._submit(request)
        if request.path == "/res.php":
            return self._result(request)
        control = self._control.get((request.method, request.path))
        if control is None:
            return HttpReply(404, "not found")
        return control(request)

    def _submit(self, request: HttpRequest) -> HttpReply:
        params = _provider_params(request)
        return _answer_reply(self._provider.submit(params), params)

    def _result(self, request: HttpRequest) -> HttpReply:
        fault = self._provider.draw_res_fault()
        if fault.delay_seconds > 0:
            self._pause(fault.delay_seconds)
        if fault.http_status is not None:
            return HttpReply(fault.http_status, http.HTTPStatus(fault.http_status).phrase)
        params = _provider_params(request)
        return _answer_reply(self._provider.result(params), params)

    def _tasks(self, _: HttpRequest) -> HttpReply:
        return HttpReply.of_json(self._registry.to_json(time.time()))

    def _stats(self, _: HttpRequest) -> HttpReply:
        return HttpReply.of_json(self._counters.snapshot())

    def _current_faults(self, _: HttpRequest) -> HttpReply:
        return HttpReply.of_json(self._faults.current.to_json())

    def _update_faults(self, request: HttpRequest) -> HttpReply:
        try:
            changes = json.loads(request.body or b"{}")
            if not isinstance(changes, dict):
                raise ConfigError("faults must be a JSON object")
            updated = self._faults.update(changes)
        except ValueError as error:  # bad JSON, or a ConfigError from the update
            return HttpReply.of_json({"error": str(error)}, status=400)
        logger.info("faults changed: %s", sorted(changes))
        return HttpReply.of_json(updated.to_json())


def _provider_params(request: HttpRequest) -> dict[str, str]:
    """Query and form fields together; a form field wins over a query field of the same name.
    A multipart upload's file arrives base64-encoded under its field name (``file``)."""
    if request.content_type.lower().startswith("multipart/form-data"):
        return {**request.query, **_multipart_fields(request)}
    form = urllib.parse.parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True)
    return {**request.query, **dict(form)}


def _multipart_fields(request: HttpRequest) -> dict[str, str]:
    head = f"Content-Type: {request.content_type}\r\n\r\n".encode()
    message = email.message_from_bytes(head + request.body, policy=email.policy.HTTP)
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if part.get_filename() is not None:
            fields[name] = base64.b64encode(payload).decode()
        else:
            fields[name] = payload.decode("utf-8", "replace")
    return fields


def _answer_reply(answer: Answer, params: Mapping[str, str]) -> HttpReply:
    if params.get("json", "").lower() in JSON_FLAGS:
        return HttpReply(200, answer.render(as_json=True), JSON_TYPE)
    return HttpReply(200, answer.render(as_json=False))


class SimulatorServer(ThreadingHTTPServer):
    """Threaded HTTP server whose `server_close()` waits for the requests still in flight;
    with `tls`, HTTPS (for clients that only build ``https://{server}/...`` URLs)."""

    daemon_threads = False
    block_on_close = True

    def __init__(
        self, address: tuple[str, int], app: SimulatorApp, tls: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(address, SimulatorRequestHandler)
        self.app = app
        self._tls = tls

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake happens in the request's own thread, never in the accept loop."""
        if self._tls is None:
            super().finish_request(request, client_address)
            return
        try:
            wrapped = self._tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # a client that does not trust the certificate, or left
        try:
            super().finish_request(wrapped, client_address)
        finally:
            wrapped.close()


class SimulatorRequestHandler(BaseHTTPRequestHandler):
    server: SimulatorServer
    server_version = "CaptchaAISimulator"
    timeout = 10  # a client stalling mid-request must not hold stop() for ever

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the request line carries API keys and pingback URLs in its query."""

    def _handle(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        body = self._read_body()
        if body is None:
            self._send(HttpReply(413, "request body missing a valid length or too large"))
            return
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        content_type = self.headers.get("Content-Type", "")
        request = HttpRequest(self.command, parts.path, query, body, content_type)
        reply = self.server.app.handle(request)
        logger.debug("%s %s -> %d", self.command, parts.path, reply.status)
        self._send(reply)

    def _read_body(self) -> bytes | None:
        length_header = self.headers.get("Content-Length", "0")
        if not length_header.isdigit() or int(length_header) > MAX_BODY_BYTES:
            return None
        return self.rfile.read(int(length_header))

    def _send(self, reply: HttpReply) -> None:
        payload = reply.body.encode("utf-8")
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(payload)))
        try:
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (a res.php caller's read timeout on a slow answer).
            self.close_connection = True
