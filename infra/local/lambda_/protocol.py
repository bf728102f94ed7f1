"""Messages between the runtime and a function worker: 4-byte length, then a JSON object."""

import json
import socket
import threading
import time
from typing import Any

_LENGTH_BYTES = 4


class ChannelClosed(EOFError):
    """The other end closed the channel (for a worker: the process exited)."""


class Channel:
    """One end of a socket pair; sends from any thread, receives from one thread at a time."""

    def __init__(self, connection: socket.socket) -> None:
        self._socket = connection
        self._send_lock = threading.Lock()
        self._buffer = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message, separators=(",", ":")).encode()
        with self._send_lock:
            self._socket.sendall(len(payload).to_bytes(_LENGTH_BYTES, "big") + payload)

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message; TimeoutError after `timeout` seconds, ChannelClosed at the end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        length = int.from_bytes(self._read_exactly(_LENGTH_BYTES, deadline), "big")
        message = json.loads(self._read_exactly(length, deadline))
        assert isinstance(message, dict)
        return message

    def close(self) -> None:
        self._socket.close()

    def _read_exactly(self, size: int, deadline: float | None) -> bytes:
        while len(self._buffer) < size:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self._socket.settimeout(remaining)
            else:
                self._socket.settimeout(None)
            try:
                chunk = self._socket.recv(65536)
            except TimeoutError:  # an OSError too, but not a closed channel
                raise
            except OSError as broken:
                raise ChannelClosed(str(broken)) from broken
            if not chunk:
                raise ChannelClosed("end of stream")
            self._buffer.extend(chunk)
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data
