"""Pingbacks: the one call per finished task that the provider makes to the submitter's URL.

Like the real providers, the simulator never retries. Faults decide, when a task finishes,
whether its pingback is dropped, duplicated, delayed, or held back and shuffled with others.
"""

from __future__ import annotations

import ipaddress
import logging
import queue
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Final

import requests

from infra.simulator.config import SimulatorConfig
from infra.simulator.faults import FaultControl
from infra.simulator.randomness import SharedRandom
from infra.simulator.stats import Counters
from infra.simulator.tasks import DeliveryAttempt, Task, TaskRegistry
from infra.simulator.timeline import Timeline

logger = logging.getLogger(__name__)

PRICE_PER_TASK: Final = "0.00299"
DROPPED: Final = "dropped"
REFUSED: Final = "refused"
TIMEOUT: Final = "timeout"
TRANSPORT_ERROR: Final = "error"
REFUSED_NON_LOOPBACK: Final = "refused_non_loopback"
TIMELINE_STOP_SECONDS: Final = 2.0
MAX_CAUSE_DEPTH: Final = 10


@dataclass(frozen=True)
class Pingback:
    task_id: str
    url: str
    method: str
    code: str


class PingbackDispatcher:
    """Schedules each task's pingback for its finish time and sends it from a pool of threads."""

    def __init__(
        self,
        config: SimulatorConfig,
        random: SharedRandom,
        faults: FaultControl,
        registry: TaskRegistry,
        counters: Counters,
    ) -> None:
        self._config = config
        self._random = random
        self._faults = faults
        self._registry = registry
        self._counters = counters
        self._timeline = Timeline("simulator-pingback-timeline")
        self._outbox: queue.Queue[Pingback | None] = queue.Queue()
        self._held: list[Pingback] = []  # touched only on the timeline thread
        self._stopping = threading.Event()
        self._senders = [
            threading.Thread(
                target=self._send_loop, name=f"simulator-pingback-sender-{number}", daemon=True
            )
            for number in range(config.pingback_workers)
        ]

    def start(self) -> None:
        self._timeline.start()
        for sender in self._senders:
            sender.start()

    def stop(self) -> None:
        """Discards pingbacks not yet sent; waits at most a delivery timeout for those in flight."""
        self._stopping.set()
        self._timeline.stop(TIMELINE_STOP_SECONDS)
        for _ in self._senders:
            self._outbox.put(None)
        deadline = time.monotonic() + self._config.pingback_timeout_seconds + 1.0
        for sender in self._senders:
            if sender.ident is not None:
                sender.join(max(0.0, deadline - time.monotonic()))

    def task_created(self, task: Task) -> None:
        if task.pingback_url is None:
            return
        pingback = Pingback(task.task_id, task.pingback_url, task.pingback_method, task.code)
        self._timeline.call_at(task.finishes_at, lambda: self._task_finished(pingback))

    def _task_finished(self, pingback: Pingback) -> None:
        faults = self._faults.current
        if self._random.chance(faults.pingback_drop_rate):
            self._counters.add("pingbacks", DROPPED)
            self._record(pingback, time.time(), DROPPED)
            logger.info("pingback for task %s: %s", pingback.task_id, DROPPED)
            return
        copies = 1
        if self._random.chance(faults.pingback_duplicate_rate):
            self._counters.add("pingbacks", "duplicated")
            copies = 2
        delay = self._config.real_seconds(self._random.uniform(*faults.pingback_delay))
        for _ in range(copies):
            self._timeline.call_at(time.time() + delay, lambda: self._release(pingback))

    def _release(self, pingback: Pingback) -> None:
        window = self._config.real_seconds(self._faults.current.pingback_reorder_window)
        if window <= 0:
            self._outbox.put(pingback)
            return
        if not self._held:
            self._timeline.call_at(time.time() + window, self._release_held)
        self._held.append(pingback)

    def _release_held(self) -> None:
        held, self._held = self._held, []
        self._random.shuffle(held)
        for pingback in held:
            self._outbox.put(pingback)

    def _send_loop(self) -> None:
        with requests.Session() as session:
            session.trust_env = False  # a proxy from the environment would carry traffic off-host
            while (pingback := self._outbox.get()) is not None and not self._stopping.is_set():
                self._deliver(session, pingback)

    def _deliver(self, session: requests.Session, pingback: Pingback) -> None:
        started = time.time()
        if is_loopback_url(pingback.url):
            outcome = self._send(session, pingback)
        else:
            outcome = REFUSED_NON_LOOPBACK
        self._count(outcome)
        self._record(pingback, started, outcome)
        logger.info("pingback for task %s (%s): %s", pingback.task_id, pingback.method, outcome)

    def _send(self, session: requests.Session, pingback: Pingback) -> int | str:
        timeout = self._config.pingback_timeout_seconds
        try:
            if pingback.method == "post":
                form = {"id": pingback.task_id, "code": pingback.code, "rate": PRICE_PER_TASK}
                response = session.post(
                    pingback.url, data=form, timeout=timeout, allow_redirects=False
                )
            else:
                url = url_with_result(pingback.url, pingback.task_id, pingback.code)
                response = session.get(url, timeout=timeout, allow_redirects=False)
        except requests.Timeout:
            return TIMEOUT
        except requests.RequestException as error:
            return REFUSED if _caused_by_refusal(error) else TRANSPORT_ERROR
        return response.status_code

    def _record(self, pingback: Pingback, at: float, outcome: int | str) -> None:
        """Called after counting, so whoever sees the attempt in the truth sees it counted."""
        attempt = DeliveryAttempt(at=at, method=pingback.method, outcome=outcome)
        self._registry.record_delivery(pingback.task_id, attempt)

    def _count(self, outcome: int | str) -> None:
        if outcome == REFUSED_NON_LOOPBACK:
            self._counters.add("pingbacks", REFUSED_NON_LOOPBACK)
            return
        self._counters.add("pingbacks", "sent")
        answered_ok = isinstance(outcome, int) and 200 <= outcome < 300
        self._counters.add("pingbacks", "delivered" if answered_ok else "failed")


def is_loopback_url(url: str) -> bool:
    """True for http(s) URLs whose host is this machine: localhost, 127.0.0.0/8 or ::1."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return False
    host = parts.hostname
    if parts.scheme not in {"http", "https"} or host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_with_result(url: str, task_id: str, code: str) -> str:
    """The pingback URL with `id` and `code` appended, its own query kept byte for byte."""
    parts = urllib.parse.urlsplit(url)
    result = urllib.parse.urlencode({"id": task_id, "code": code})
    query = f"{parts.query}&{result}" if parts.query else result
    return urllib.parse.urlunsplit(parts._replace(query=query))


def _caused_by_refusal(error: BaseException) -> bool:
    """requests wraps the socket's ConnectionRefusedError a few levels down its cause chain."""
    cause: BaseException | None = error
    for _ in range(MAX_CAUSE_DEPTH):
        if cause is None:
            return False
        if isinstance(cause, ConnectionRefusedError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
