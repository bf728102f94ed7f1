"""The seed's own design (Pattern 1 + Pattern 3 as published), run through the same scenario.

Everything lives in one process's memory: the pending tasks, the results, the lock. A callback
route stores a result once (idempotent), and a poller thread asks res.php, one request per task,
about tasks older than the callback timeout. When the process goes down (the scenario's outage)
it is restarted empty, exactly as a redeployed Flask app would be: that is the seed's weakness
this project exists to remove, so it is measured, not fixed.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

LOOPBACK = "127.0.0.1"


@dataclass
class BaselineMemory:
    """The seed's module-level dicts."""

    pending: dict[str, float] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class BaselineCounters:
    """Kept outside the process's memory so the report survives its restarts."""

    res_requests: int = 0
    callbacks_refused_by_crash: int = 0
    restarts: int = 0
    stored_at: dict[str, float] = field(default_factory=dict)
    """When each result reached the memory: the seed's worker reads it from there at once."""


class SeedBaseline:
    def __init__(
        self,
        provider_url: str,
        api_key: str,
        *,
        callback_timeout_seconds: float,
        poll_interval_seconds: float,
        crash_rate: float = 0.0,
        seed: int = 0,
    ) -> None:
        self._provider_url = provider_url.rstrip("/")
        self._api_key = api_key
        self._callback_timeout = callback_timeout_seconds
        self._poll_interval = poll_interval_seconds
        self._crash_rate = crash_rate
        self._rng = random.Random(seed)
        self.counters = BaselineCounters()
        self._memory = BaselineMemory()
        self._server: ThreadingHTTPServer | None = None
        self._port = 0
        self._stopping = threading.Event()
        self._poller: threading.Thread | None = None

    @property
    def callback_url(self) -> str:
        return f"http://{LOOPBACK}:{self._port}/callback"

    def start(self) -> None:
        self._serve()
        self._poller = threading.Thread(target=self._poll_forever, daemon=True, name="seed-poller")
        self._poller.start()

    def stop(self) -> None:
        self._stopping.set()
        self._close_server()
        if self._poller:
            self._poller.join(timeout=10)

    def go_down(self) -> None:
        """The process dies: connections are refused and its memory is gone."""
        self._close_server()
        self._memory = BaselineMemory()

    def come_back(self) -> None:
        self.counters.restarts += 1
        self._serve()

    def results(self) -> dict[str, str]:
        with self._memory.lock:
            return dict(self._memory.results)

    def submit(self, sitekey: str, page_url: str) -> str | None:
        """The seed's submit_captcha: in.php with the pingback, then remember it as pending."""
        answer = requests.post(
            f"{self._provider_url}/in.php",
            data={
                "key": self._api_key,
                "method": "userrecaptcha",
                "googlekey": sitekey,
                "pageurl": page_url,
                "pingback": self.callback_url,
                "json": 1,
            },
            timeout=10,
        ).json()
        if answer.get("status") != 1:
            return None
        task_id = str(answer["request"])
        memory = self._memory
        with memory.lock:
            memory.pending[task_id] = time.time()
        return task_id

    def _serve(self) -> None:
        baseline = self

        class CallbackHandler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                self._handle({k: v[0] for k, v in query.items()})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = parse_qs(self.rfile.read(length).decode("utf-8", "replace"))
                self._handle({k: v[0] for k, v in form.items()})

            def _handle(self, fields: dict[str, str]) -> None:
                status = baseline._on_callback(fields.get("id", ""), fields.get("code", ""))
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer((LOOPBACK, self._port), CallbackHandler)
        self._port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True, name="seed-http").start()

    def _close_server(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _on_callback(self, task_id: str, code: str) -> int:
        """Pattern 3: a task already in results is skipped; else stored and dropped from pending."""
        if self._rng.random() < self._crash_rate:
            self.counters.callbacks_refused_by_crash += 1
            return 500
        memory = self._memory
        with memory.lock:
            if task_id not in memory.results:
                memory.results[task_id] = code
                memory.pending.pop(task_id, None)
                self.counters.stored_at.setdefault(task_id, time.time())
        return 200

    def _poll_forever(self) -> None:
        while not self._stopping.wait(self._poll_interval):
            self._poll_stale_tasks()

    def _poll_stale_tasks(self) -> None:
        memory = self._memory
        now = time.time()
        with memory.lock:
            stale = [t for t, at in memory.pending.items() if now - at > self._callback_timeout]
        for task_id in stale:
            self._poll_one(memory, task_id)

    def _poll_one(self, memory: BaselineMemory, task_id: str) -> None:
        self.counters.res_requests += 1
        try:
            answer = requests.get(
                f"{self._provider_url}/res.php",
                params={"key": self._api_key, "action": "get", "id": task_id, "json": "1"},
                timeout=10,
            ).json()
        except (requests.RequestException, ValueError):
            return
        if answer.get("status") == 1:
            with memory.lock:
                memory.results.setdefault(task_id, str(answer["request"]))
                memory.pending.pop(task_id, None)
                self.counters.stored_at.setdefault(task_id, time.time())
        elif answer.get("request") != "CAPCHA_NOT_READY":
            with memory.lock:
                memory.pending.pop(task_id, None)
