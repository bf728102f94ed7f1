"""The local HTTP API: every route the template declares, served on 127.0.0.1.

It can be taken down and brought back at runtime; while down its port refuses connections. With a
GatewayTls it also serves every route over HTTPS on a second port (apigateway/tls.py's test CA).
IAM-authorised routes verify the SigV4 signature against the local principals (403 otherwise).
It refuses what API Gateway and Lambda refuse, where they do (apigateway/limits.py,
docs/aws-limits.md): a request line and headers over the quota and a body over the payload quota
before any route is matched, an event Lambda would refuse as too large before the function runs,
and an answer later than the integration timeout (the invocation runs on, as Lambda's does).
"""

import json
import queue
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from infra.local.apigateway.http_api import (
    INTERNAL_SERVER_ERROR,
    NOT_FOUND,
    SERVICE_UNAVAILABLE,
    TOO_LARGE,
    ApiContext,
    HttpRequest,
    HttpResponse,
    RouteTable,
    build_event,
    json_response,
    map_result,
)
from infra.local.apigateway.limits import (
    HTTP_API_INTEGRATION_TIMEOUT_SECONDS,
    HTTP_API_PAYLOAD_BYTES,
    HTTP_API_REQUEST_LINE_AND_HEADERS_BYTES,
    LAMBDA_SYNC_PAYLOAD_BYTES,
)
from infra.local.apigateway.sigv4 import Denied, SignedRequest, verify
from infra.local.lambda_.pool import Invocation, PoolClosed
from infra.local.runtime.aws import LocalPrincipal
from infra.local.runtime.http_server import LOCALHOST, LocalHttpServer, QuietHandler

Invoker = Callable[[str, Any], Invocation]


def invoke_within(invoke: Invoker, function: str, event: Any, timeout: float) -> Invocation | None:
    """The invocation, or None when it outlasts `timeout`: API Gateway's integration timeout
    answers the caller, while the function runs on to its own end, as on Lambda."""
    outcome: queue.Queue[Invocation | BaseException] = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            outcome.put(invoke(function, event))
        except BaseException as error:  # re-raised in the caller's thread
            outcome.put(error)

    threading.Thread(target=run, daemon=True).start()
    try:
        done = outcome.get(timeout=timeout)
    except queue.Empty:
        return None
    if isinstance(done, BaseException):
        raise done
    return done


def lambda_payload_bytes(event: Any) -> int:
    """The size of the Invoke request's payload: the event as JSON."""
    return len(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode())


@dataclass
class GatewayTls:
    """The HTTPS listener's context and port (0: any free one, then kept across restarts)."""

    context: ssl.SSLContext
    port: int = 0


ResponseObserver = Callable[[str | None, int], None]
"""Told the route key (None: no route matched) and status of every answer (local metrics)."""


class HttpGateway:
    def __init__(
        self,
        routes: RouteTable,
        invoke: Invoker,
        api: ApiContext,
        port: int,
        access_log: IO[str],
        observe: ResponseObserver | None = None,
        tls: GatewayTls | None = None,
        integration_timeout: float = HTTP_API_INTEGRATION_TIMEOUT_SECONDS,
    ) -> None:
        self._observe = observe
        self._integration_timeout = integration_timeout
        self._tls = tls
        self._tls_server: LocalHttpServer | None = None
        self._routes = routes
        self._invoke = invoke
        self._api = api
        self._port = port
        self._access_log = access_log
        self._server: LocalHttpServer | None = None
        self._switch_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._log_closed = False
        self._in_flight = 0
        self._in_flight_changed = threading.Condition()

    @property
    def url(self) -> str:
        return f"http://{LOCALHOST}:{self._port}"

    @property
    def tls_url(self) -> str | None:
        """The same routes over HTTPS (the test CA's certificate), when the gateway has TLS."""
        return None if self._tls is None else f"https://{LOCALHOST}:{self._tls.port}"

    @property
    def is_up(self) -> bool:
        return self._server is not None

    def set_up(self, up: bool) -> None:
        """Both listeners go down and come back together, each on the port it had."""
        with self._switch_lock:
            if up and self._server is None:
                self._server = LocalHttpServer(self._port, _GatewayHandler, self)
                self._port = self._server.port
                self._server.start()
                if self._tls is not None:
                    self._tls_server = LocalHttpServer(
                        self._tls.port, _GatewayHandler, self, self._tls.context
                    )
                    self._tls.port = self._tls_server.port
                    self._tls_server.start()
            elif not up and self._server is not None:
                self._server.stop()
                self._server = None
                if self._tls_server is not None:
                    self._tls_server.stop()
                    self._tls_server = None

    @contextmanager
    def in_flight(self) -> Iterator[None]:
        """Counts a request from when it was read until its answer is written."""
        with self._in_flight_changed:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._in_flight_changed:
                self._in_flight -= 1
                self._in_flight_changed.notify_all()

    @property
    def requests_in_flight(self) -> int:
        with self._in_flight_changed:
            return self._in_flight

    def drain(self, timeout: float) -> int:
        """Wait until no request is in flight (at most `timeout` s); the number still in flight."""
        with self._in_flight_changed:
            self._in_flight_changed.wait_for(lambda: self._in_flight == 0, timeout)
            return self._in_flight

    def close_access_log(self) -> None:
        """After this, access lines are dropped (a request still in flight cannot fail on it)."""
        with self._log_lock:
            self._log_closed = True
            self._access_log.close()

    def handle(self, request: HttpRequest) -> tuple[HttpResponse, str | None]:
        """The response, and the API Gateway request id when a route was matched."""
        response, request_id = self._answer(request)
        if self._observe is not None:
            matched = self._routes.match(request.method, request.raw_path)
            self._observe(matched.route.route_key if matched else None, response.status)
        return response, request_id

    def _answer(self, request: HttpRequest) -> tuple[HttpResponse, str | None]:
        matched = self._routes.match(request.method, request.raw_path)
        if matched is None:
            return NOT_FOUND, None
        caller: LocalPrincipal | None = None
        if matched.route.iam_auth:
            verified = self._caller(request)
            if isinstance(verified, Denied):
                self._log_line(f"{matched.route.route_key} 403 (SigV4: {verified.message})")
                return json_response(403, {"message": verified.message}), None
            caller = verified
        event = build_event(request, matched, self._api, caller)
        request_id = event["requestContext"]["requestId"]
        route_key = matched.route.route_key
        if lambda_payload_bytes(event) > LAMBDA_SYNC_PAYLOAD_BYTES:
            # Lambda refuses the Invoke (RequestEntityTooLargeException): the function never
            # runs, and API Gateway answers as for any invocation Lambda rejects.
            self._log_line(
                f"{route_key} 500 (event over Lambda's {LAMBDA_SYNC_PAYLOAD_BYTES} bytes)"
            )
            return INTERNAL_SERVER_ERROR, request_id
        started = time.monotonic()
        try:
            invocation = invoke_within(
                self._invoke, matched.route.function, event, self._integration_timeout
            )
        except PoolClosed:
            return SERVICE_UNAVAILABLE, request_id
        if invocation is None:
            self._log_line(f"{route_key} 503 (integration timeout {self._integration_timeout:g}s)")
            return SERVICE_UNAVAILABLE, request_id
        response = map_result(invocation.result) if invocation.ok else INTERNAL_SERVER_ERROR
        self._log_access(
            matched.route.route_key, matched.route.function, response.status, started, invocation
        )
        return response, request_id

    def _caller(self, request: HttpRequest) -> LocalPrincipal | Denied:
        headers: dict[str, str] = {}
        for name, value in request.headers:
            key = name.lower()
            headers[key] = f"{headers[key]},{value}" if key in headers else value
        signed = SignedRequest(
            method=request.method,
            host=headers.get("host", request.domain_name),
            raw_path=request.raw_path,
            raw_query=request.raw_query,
            headers=headers,
            body=request.body,
        )
        return verify(signed, self._api.principals, self._api.region, time.time())

    def _log_access(
        self,
        route_key: str,
        function: str,
        status: int,
        started: float,
        invocation: Invocation,
    ) -> None:
        elapsed_ms = (time.monotonic() - started) * 1000
        error = (
            "" if invocation.ok else f" {invocation.error and invocation.error.get('errorType')}"
        )
        # The route key, like the template's access log: the raw path carries the secret.
        self._log_line(f"{route_key} -> {function} {status} {elapsed_ms:.0f}ms{error}")

    def _log_line(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {text}\n"
        with self._log_lock:
            if not self._log_closed:
                self._access_log.write(line)
                self._access_log.flush()


class _GatewayHandler(QuietHandler):
    server: LocalHttpServer

    def do_request(self) -> None:
        gateway: HttpGateway = self.server.app
        with gateway.in_flight():
            self._serve(gateway)

    def _serve(self, gateway: HttpGateway) -> None:
        if self._request_line_and_header_bytes() > HTTP_API_REQUEST_LINE_AND_HEADERS_BYTES:
            self.write_response(TOO_LARGE)
            return
        body = self.read_body(HTTP_API_PAYLOAD_BYTES)
        if body is None:
            self.write_response(TOO_LARGE)
            return
        raw_path, _, raw_query = self.path.partition("?")
        request = HttpRequest(
            method=self.command,
            raw_path=raw_path,
            raw_query=raw_query,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            domain_name=self.headers.get("host") or f"{LOCALHOST}:{self.server.port}",
            protocol=self.request_version,
        )
        response, request_id = gateway.handle(request)
        self.write_response(response, {"apigw-requestid": request_id} if request_id else None)

    def _request_line_and_header_bytes(self) -> int:
        """What the quota counts: the request line and the header values."""
        values = sum(len(value.encode("latin-1", "replace")) for value in self.headers.values())
        return len(self.requestline.encode("latin-1", "replace")) + values

    do_GET = do_request
    do_POST = do_request
    do_PUT = do_request
    do_PATCH = do_request
    do_DELETE = do_request
    do_HEAD = do_request
    do_OPTIONS = do_request
