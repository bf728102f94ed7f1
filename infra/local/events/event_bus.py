"""The stack's EventBridge buses, locally: PutEvents, rule matching, and delivery to the rules'
function targets, invoked asynchronously like Lambda does for EventBridge.

A failed invocation is retried LAMBDA_ASYNC_RETRIES times (Lambda's default for asynchronous
invocations), 1 and 2 minutes later as on AWS: NOT divided by the time scale, because what makes
an invocation fail (a fault window, a dependency down) lasts real seconds here too. Then the
event is dropped and counted.
Events put locally stay in this process (moto's bus is not involved): `published()` is the log
of the last PUBLISHED_LOG_LIMIT events.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from infra.local.apigateway.gateway import Invoker
from infra.local.events.event_patterns import matches
from infra.local.events.event_sources import LAMBDA_ASYNC_RETRIES, RuleSpec
from infra.local.lambda_.pool import PoolClosed
from infra.local.runtime.aws import ACCOUNT_ID
from infra.local.runtime.stats import SharedStats
from infra.local.runtime.threads import BackgroundThreads

logger = logging.getLogger(__name__)

LAMBDA_ASYNC_RETRY_DELAYS_SECONDS = (60.0, 120.0)
_WAIT_SECONDS = 0.2
PUBLISHED_LOG_LIMIT = 100_000


@dataclass(frozen=True)
class BusEntry:
    """One PutEvents entry."""

    bus_name: str
    source: str
    detail_type: str
    detail: dict[str, Any]
    resources: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Delivery:
    rule: str
    function: str
    event: dict[str, Any]
    attempt: int = 0


@dataclass
class BusStats(SharedStats):
    put: int = 0
    deliveries: int = 0
    invocations: int = 0
    retried: int = 0
    dropped: int = 0


class LocalEventBus:
    def __init__(
        self,
        rules: Sequence[RuleSpec],
        invoke: Invoker,
        *,
        region: str,
        retry_delays: Sequence[float] = LAMBDA_ASYNC_RETRY_DELAYS_SECONDS,
        workers: int = 2,
    ) -> None:
        if len(retry_delays) < LAMBDA_ASYNC_RETRIES:
            raise ValueError(f"one retry delay per retry ({LAMBDA_ASYNC_RETRIES})")
        self._rules = list(rules)
        self._invoke = invoke
        self._region = region
        self._retry_delays = tuple(retry_delays)
        self._workers = workers
        self._deliveries: queue.Queue[_Delivery] = queue.Queue()
        self._published: deque[dict[str, Any]] = deque(maxlen=PUBLISHED_LOG_LIMIT)
        self._unfinished = 0
        self._lock = threading.Lock()
        self._threads = BackgroundThreads()
        self._timers: set[threading.Timer] = set()
        self.stats = BusStats()

    def start(self) -> None:
        for _ in range(self._workers):
            self._threads.start(self._deliver_forever)

    def stop(self, timeout: float) -> None:
        with self._lock:
            for timer in self._timers:
                timer.cancel()
        self._threads.stop(timeout)

    def put_events(self, entries: Sequence[BusEntry]) -> list[str]:
        """Accept the entries (event ids returned) and queue a delivery per matching target."""
        ids: list[str] = []
        for entry in entries:
            event = self._event(entry)
            ids.append(event["id"])
            targets = [
                (rule.logical_id, function)
                for rule in self._rules
                if rule.bus_name == entry.bus_name and matches(rule.pattern, event)
                for function in rule.functions
            ]
            with self._lock:
                self._published.append(event)
                self._unfinished += len(targets)
            self.stats.add(put=1, deliveries=len(targets))
            for rule, function in targets:
                self._deliveries.put(_Delivery(rule, function, event))
        return ids

    def published(self) -> list[dict[str, Any]]:
        """The events put so far (the last PUBLISHED_LOG_LIMIT), in order; they may carry
        tokens: never log them."""
        with self._lock:
            return list(self._published)

    def backlog(self) -> int:
        """Deliveries queued, running or waiting for a retry."""
        with self._lock:
            return self._unfinished

    def _event(self, entry: BusEntry) -> dict[str, Any]:
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": entry.detail_type,
            "source": entry.source,
            "account": ACCOUNT_ID,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "region": self._region,
            "resources": list(entry.resources),
            "detail": entry.detail,
        }

    def _deliver_forever(self) -> None:
        while not self._threads.stopping.is_set():
            try:
                delivery = self._deliveries.get(timeout=_WAIT_SECONDS)
            except queue.Empty:
                continue
            try:
                self._deliver(delivery)
            except PoolClosed:
                return

    def _deliver(self, delivery: _Delivery) -> None:
        invocation = self._invoke(delivery.function, delivery.event)
        self.stats.add(invocations=1)
        if invocation.ok:
            self._finished()
            return
        error = invocation.error or {}
        if delivery.attempt >= LAMBDA_ASYNC_RETRIES:
            logger.warning(
                "%s -> %s: event %s dropped after %d attempts: %s",
                delivery.rule,
                delivery.function,
                delivery.event["id"],
                delivery.attempt + 1,
                error.get("errorType"),
            )
            self.stats.add(dropped=1)
            self._finished()
            return
        self.stats.add(retried=1)
        delay = self._retry_delays[delivery.attempt]
        retry = _Delivery(delivery.rule, delivery.function, delivery.event, delivery.attempt + 1)
        self._retry_later(retry, delay)

    def _retry_later(self, delivery: _Delivery, delay: float) -> None:
        def enqueue() -> None:
            with self._lock:
                self._timers.discard(timer)
            self._deliveries.put(delivery)

        timer = threading.Timer(delay, enqueue)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()

    def _finished(self) -> None:
        with self._lock:
            self._unfinished -= 1
