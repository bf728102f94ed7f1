"""The threaded 127.0.0.1 HTTP servers of the runtime (gateway and control API)."""

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from infra.local.apigateway.http_api import HttpResponse

LOCALHOST = "127.0.0.1"
# Set by the server from the body it sends, whatever a function's response says.
_FRAMING_HEADERS = frozenset({"content-length", "connection", "transfer-encoding"})


class LocalHttpServer(ThreadingHTTPServer):
    """Serves `handler_class` on 127.0.0.1; `app` is what the handlers call into."""

    daemon_threads = True
    # Chaos runs open many connections at once; the default backlog (5) would reset some.
    request_queue_size = 256

    def __init__(
        self,
        port: int,
        handler_class: type[BaseHTTPRequestHandler],
        app: Any,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__((LOCALHOST, port), handler_class)
        self.app = app
        self._tls = tls
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """With TLS, the handshake happens here, in the request's own thread: a slow or broken
        client never holds up the accept loop."""
        if self._tls is None:
            super().finish_request(request, client_address)
            return
        try:
            wrapped = self._tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # a client that does not trust the test CA, or left: nothing to answer
        try:
            super().finish_request(wrapped, client_address)
        finally:
            wrapped.close()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting: after this, connecting to the port is refused."""
        self.shutdown()
        self.server_close()
        self._thread.join()


class QuietHandler(BaseHTTPRequestHandler):
    """One request per connection, no access log on stderr, HttpResponse writing."""

    def log_message(self, format: str, *args: Any) -> None:
        """The runtime's own logs say what matters; stderr stays clean."""

    def read_body(self, limit: int) -> bytes | None:
        """The request body, or None when it is larger than `limit` bytes."""
        length = int(self.headers.get("content-length") or 0)
        if length > limit:
            return None
        return self.rfile.read(length) if length else b""

    def write_response(
        self, response: HttpResponse, extra_headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(response.status)
        for name, value in {**response.headers, **(extra_headers or {})}.items():
            if name.lower() not in _FRAMING_HEADERS:
                self.send_header(name, value)
        for cookie in response.cookies:
            self.send_header("set-cookie", cookie)
        self.send_header("content-length", str(len(response.body)))
        self.send_header("connection", "close")
        try:
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (a provider's pingback timeout): nothing left to answer.
            self.close_connection = True
