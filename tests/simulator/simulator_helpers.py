"""Helpers for the simulator tests: a client for a running simulator, a pingback receiver.

Every server here binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import functools
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

from infra.simulator import Simulator
from tests import waiting

# 100 nominal seconds of solving become 0.1 s; results stay retrievable for 10 s.
FAST_CONFIG: dict[str, Any] = {
    "seed": 7,
    "time_scale": 1000.0,
    "solve_time": {"kind": "uniform", "min_seconds": 100, "max_seconds": 100},
    "unsolvable_rate": 0.0,
    "result_retention_seconds": 10_000,
}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
# At FAST_CONFIG's time scale the simulator answers within milliseconds: look often.
wait_until = functools.partial(waiting.wait_until, timeout=5.0, interval=0.01)


def local_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # never send test traffic through a proxy from the environment
    return session


class SimulatorClient:
    """Speaks in.php / res.php / _sim to one running simulator."""

    def __init__(self, simulator: Simulator) -> None:
        self.simulator = simulator
        self.base_url = simulator.base_url
        self.api_key = simulator.api_key
        self.session = local_session()

    def submit(self, via: str = "POST", **fields: Any) -> requests.Response:
        form = {
            "key": self.api_key,
            "method": "userrecaptcha",
            "googlekey": SITEKEY,
            "pageurl": "https://shop.example/login",
            **fields,
        }
        if via == "GET":
            return self.session.get(f"{self.base_url}/in.php", params=form, timeout=5)
        return self.session.post(f"{self.base_url}/in.php", data=form, timeout=5)

    def submit_id(self, **fields: Any) -> str:
        answer = self.submit(json=1, **fields).json()
        assert answer["status"] == 1, answer
        return str(answer["request"])

    def res(self, **params: Any) -> requests.Response:
        return self.session.get(
            f"{self.base_url}/res.php", params={"key": self.api_key, **params}, timeout=5
        )

    def res_json(self, **params: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self.res(json=1, **params).json()
        return answer

    def wait_for_result(self, task_id: str, timeout: float = 5.0) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            answer = self.res_json(action="get", id=task_id)
            return None if answer.get("request") == "CAPCHA_NOT_READY" else answer

        result: dict[str, Any] = wait_until(finished, timeout=timeout)
        return result

    def truth(self, task_id: str) -> dict[str, Any]:
        return next(task for task in self.simulator.tasks() if task["id"] == task_id)


@dataclass(frozen=True)
class ReceivedPingback:
    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    content_type: str
    received_at: float


class PingbackReceiver:
    """A local stand-in for the callback endpoint; records every request it gets."""

    def __init__(self) -> None:
        self.received: list[ReceivedPingback] = []
        self.status = 200
        self.delay_seconds = 0.0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.start()

    def url(self, path: str = "/callback/s3cret", query: str = "") -> str:
        address = f"http://127.0.0.1:{self._server.server_port}{path}"
        return f"{address}?{query}" if query else address

    def wait_for(self, count: int, timeout: float = 5.0) -> list[ReceivedPingback]:
        def enough() -> list[ReceivedPingback] | None:
            with self._lock:
                return list(self.received) if len(self.received) >= count else None

        received: list[ReceivedPingback] = wait_until(enough, timeout=timeout)
        return received

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _record(self, pingback: ReceivedPingback) -> None:
        with self._lock:
            self.received.append(pingback)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def _answer(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                receiver._record(
                    ReceivedPingback(
                        method=self.command,
                        path=parts.path,
                        query=dict(urllib.parse.parse_qsl(parts.query)),
                        form=dict(urllib.parse.parse_qsl(body)),
                        content_type=self.headers.get("Content-Type", ""),
                        received_at=time.time(),
                    )
                )
                time.sleep(receiver.delay_seconds)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler
