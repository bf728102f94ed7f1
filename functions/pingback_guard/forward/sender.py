"""The only code that calls a worker's own pingback URL (in.php's ``pingback``): 2captcha's
pingback, a form POST of ``id`` and ``code``. A failure names neither the URL nor the code.

The worker's server is anyone's: it may answer slowly, endlessly, or redirect elsewhere. So the
request goes to the address the forwarder checked (the host's name is never resolved again: its
DNS answer could change in between), https verifies the certificate against the URL's host name
as usual, one deadline covers the whole exchange (connecting, TLS, sending, every read), only the
reply's status line and headers are read (at most MAX_REPLY_BYTES), and no redirect is followed.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote, urlencode, urlsplit

import certifi

from pingback_guard.domain.errors import ForwardFailedError
from pingback_guard.forward.addresses import IpAddress

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

DEADLINE_SECONDS = 8.0  # the function's timeout (15 s) leaves room for the table read around it
MAX_REPLY_BYTES = 64 * 1024
USER_AGENT = "pingback-guard/0.1 (pingback forward)"
# What requests leaves unquoted in a URL: a path or query already quoted stays as it is.
URL_SAFE = "!#$%&'()*+,/:;=?@[]~"


class ForwardSender(Protocol):
    def send(self, url: str, addresses: Sequence[IpAddress], task_id: str, code: str) -> None:
        """Deliver to ``url``'s server at the first of ``addresses`` that takes a connection;
        ForwardFailedError unless it takes the pingback (2xx)."""


class ForwardDeadlinePassed(TimeoutError):
    """The exchange took longer than its deadline, in however many reads."""


class ReplyTooLarge(http.client.HTTPException):
    """The reply's status line and headers went past MAX_REPLY_BYTES."""


class HttpForwardSender:
    def __init__(
        self,
        tls: ssl.SSLContext | None = None,
        *,
        deadline_seconds: float = DEADLINE_SECONDS,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        # The same trust store as requests (certifi), whatever the runtime's system store holds.
        self._tls = tls or ssl.create_default_context(cafile=certifi.where())
        self._deadline_seconds = deadline_seconds
        self._max_reply_bytes = max_reply_bytes

    def send(self, url: str, addresses: Sequence[IpAddress], task_id: str, code: str) -> None:
        parts = urlsplit(url)
        deadline = time.monotonic() + self._deadline_seconds
        connection = _PinnedConnection(
            parts.hostname or "",
            parts.port,
            addresses=[str(address) for address in addresses],
            tls=self._tls if parts.scheme == "https" else None,
            deadline=deadline,
            max_reply_bytes=self._max_reply_bytes,
        )
        target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), URL_SAFE)
        try:
            connection.request(
                "POST",
                target,
                body=urlencode({"id": task_id, "code": code}),
                headers={
                    "Content-Type": "application/x-www-form-urlencoded",
                    "User-Agent": USER_AGENT,
                    "Connection": "close",
                },
            )
            with connection.getresponse() as reply:
                status = reply.status
        except (OSError, http.client.HTTPException) as error:
            raise ForwardFailedError(f"forward: {type(error).__name__}") from None
        finally:
            connection.close()
        if not 200 <= status < 300:
            raise ForwardFailedError(f"forward: HTTP {status}")


class _PinnedConnection(http.client.HTTPConnection):
    """http.client's request and reply parsing, on a socket to one of the given addresses (as
    socket.create_connection tries a name's, in order), bounded by one deadline (each socket
    operation waits at most what is left of it) and a byte budget."""

    def __init__(
        self,
        host: str,
        port: int | None,
        *,
        addresses: list[str],
        tls: ssl.SSLContext | None,
        deadline: float,
        max_reply_bytes: int,
    ) -> None:
        # The Host header names the port unless it is the scheme's own.
        self.default_port = http.client.HTTPS_PORT if tls is not None else http.client.HTTP_PORT
        super().__init__(host, port or self.default_port)
        self._addresses = addresses
        self._tls = tls
        self._deadline = deadline
        self._max_reply_bytes = max_reply_bytes

    def connect(self) -> None:
        sock = self._first_connected()
        if self._tls is not None:
            # The handshake as a whole is bounded by the socket's timeout (ssl's own deadline).
            sock.settimeout(_left(self._deadline))
            sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        sock.settimeout(_left(self._deadline))  # sendall: a total for all the data, since 3.5
        self.sock = sock

    def _first_connected(self) -> socket.socket:
        failure: OSError = ConnectionError("no address")
        for address in self._addresses:
            try:
                return socket.create_connection((address, self.port), _left(self._deadline))
            except ForwardDeadlinePassed:
                raise
            except OSError as error:
                failure = error  # e.g. an IPv6 address where the function has no IPv6 route
        raise failure

    def getresponse(self) -> http.client.HTTPResponse:
        reply = http.client.HTTPResponse(
            _BoundedSocket(self.sock, self._deadline, self._max_reply_bytes),  # type: ignore[arg-type]
            method="POST",
        )
        reply.begin()  # the status line and headers; the body is never read
        return reply


class _BoundedSocket:
    """What http.client.HTTPResponse reads through (``makefile``), with the deadline and budget."""

    def __init__(self, sock: socket.socket, deadline: float, budget: int) -> None:
        self._sock = sock
        self._deadline = deadline
        self._budget = budget

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_BoundedReads(self._sock, self._deadline, self._budget))


class _BoundedReads(io.RawIOBase):
    def __init__(self, sock: socket.socket, deadline: float, budget: int) -> None:
        self._sock = sock
        self._deadline = deadline
        self._left = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        if self._left <= 0:
            raise ReplyTooLarge
        self._sock.settimeout(_left(self._deadline))
        view = memoryview(buffer)
        received = self._sock.recv_into(view, min(len(view), self._left))
        self._left -= received
        return received


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ForwardDeadlinePassed
    return left
