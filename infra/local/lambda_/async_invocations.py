"""Lambda's asynchronous invocation, as AWS documents it: every Event invocation (the Invoke API's
``Event`` type, an EventBridge rule's target, a schedule's run) goes into the function's own
queue and is accepted at once; Lambda then runs it, retries it, or gives up on it.

https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html and
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html:
- a function error (the handler's, or the runtime's: a timeout, a crash) is retried
  ``MaximumRetryAttempts`` times (default 2), one minute after the first attempt and two minutes
  after the second (RETRY_DELAYS_SECONDS);
- a throttled attempt (no concurrency free: here, no worker of the function free) goes back to
  the queue and is tried again with a delay growing exponentially from 1 second to 5 minutes,
  until the event is ``MaximumEventAgeInSeconds`` old (default 6 hours); throttles are not retries;
- an event that failed its last retry (``RetriesExhausted``) or waited longer than its maximum
  age (``EventAgeExceeded``) is discarded, its record sent to the on-failure destination if there
  is one (infra/local/lambda_/destinations.py); a success goes to the on-success destination.
The settings are the function's EventInvokeConfig
(https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionEventInvokeConfig.html; in the
template AWS::Lambda::EventInvokeConfig, which SAM makes from a function's EventInvokeConfig
property: https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-eventinvokeconfiguration.html),
read back from moto where the twin's CloudFormation put it (local_resources.EventInvokeConfig).

Every delay and age is divided by the stack's time scale, as schedules and visibility timeouts
are, so a chaos run at 12x retries after 5 s and 10 s.
"""

import heapq
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from infra.local.lambda_.destinations import (
    EVENT_AGE_EXCEEDED,
    RETRIES_EXHAUSTED,
    SUCCESS,
    invocation_record,
)
from infra.local.lambda_.pool import Invocation, PoolClosed
from infra.local.runtime.stats import SharedStats
from infra.local.runtime.threads import BackgroundThreads

logger = logging.getLogger(__name__)

DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 2
DEFAULT_MAXIMUM_EVENT_AGE_SECONDS = 6 * 3600
RETRY_DELAYS_SECONDS = (60.0, 120.0)
THROTTLE_FIRST_DELAY_SECONDS = 1.0
THROTTLE_MAX_DELAY_SECONDS = 300.0
# How long a dispatcher waits for a free worker before the attempt counts as throttled.
SLOT_WAIT_SECONDS = 0.5
_IDLE_WAIT_SECONDS = 0.2

TryInvoke = Callable[[str, Any, float], Invocation | None]
"""(function logical id, event, seconds to wait for a worker) -> the invocation, None if
throttled; PoolClosed when the function is stopping."""
SendRecord = Callable[[str, str, Mapping[str, Any]], str | None]
"""(function logical id, destination ARN, record) -> None when sent, else why not."""


@dataclass(frozen=True)
class AsyncConfig:
    """A function's EventInvokeConfig, Lambda's defaults where it has none."""

    maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS
    maximum_event_age_seconds: float = DEFAULT_MAXIMUM_EVENT_AGE_SECONDS
    on_failure: str | None = None
    on_success: str | None = None

    @classmethod
    def from_api(cls, config: Mapping[str, Any]) -> "AsyncConfig":
        """From a GetFunctionEventInvokeConfig answer."""
        destinations = config.get("DestinationConfig", {})
        return cls(
            maximum_retry_attempts=int(
                config.get("MaximumRetryAttempts", DEFAULT_MAXIMUM_RETRY_ATTEMPTS)
            ),
            maximum_event_age_seconds=float(
                config.get("MaximumEventAgeInSeconds", DEFAULT_MAXIMUM_EVENT_AGE_SECONDS)
            ),
            on_failure=destinations.get("OnFailure", {}).get("Destination") or None,
            on_success=destinations.get("OnSuccess", {}).get("Destination") or None,
        )


def read_async_configs(
    lambda_client: Any, function_names: Mapping[str, str]
) -> dict[str, AsyncConfig]:
    """Each function's AsyncConfig (by logical id) as stored in moto, the defaults where none."""
    configs: dict[str, AsyncConfig] = {}
    for logical_id, function_name in function_names.items():
        try:
            stored = lambda_client.get_function_event_invoke_config(FunctionName=function_name)
        except lambda_client.exceptions.ResourceNotFoundException:
            stored = {}
        configs[logical_id] = AsyncConfig.from_api(stored)
    return configs


@dataclass
class AsyncStats(SharedStats):
    accepted: int = 0
    attempts: int = 0
    succeeded: int = 0
    retried: int = 0
    """Attempts scheduled again after a function error."""
    throttled: int = 0
    retries_exhausted: int = 0
    event_age_exceeded: int = 0
    sent_to_destination: int = 0
    destination_delivery_failures: int = 0
    discarded_without_destination: int = 0


@dataclass
class _QueuedEvent:
    request_id: str
    event: Any
    accepted_at: float
    invoke_count: int = 0
    throttles: int = 0
    last: Invocation | None = None


@dataclass
class _FunctionQueue:
    """One function's internal queue: events by the time they are due."""

    due: list[tuple[float, int, _QueuedEvent]] = field(default_factory=list)
    running: int = 0
    changed: threading.Condition = field(default_factory=threading.Condition)


class AsyncInvocations:
    def __init__(
        self,
        configs: Mapping[str, AsyncConfig],
        function_arns: Mapping[str, str],
        *,
        try_invoke: TryInvoke,
        send_record: SendRecord,
        time_scale: float,
        workers_of: Callable[[str], int],
    ) -> None:
        """`configs` and `function_arns` by function logical id; `workers_of`: how many events
        of a function run at once (its workers: its concurrency)."""
        self._configs = dict(configs)
        self._arns = dict(function_arns)
        self._try_invoke = try_invoke
        self._send_record = send_record
        self._time_scale = time_scale
        self._workers_of = workers_of
        self._queues = {logical_id: _FunctionQueue() for logical_id in function_arns}
        self._order = itertools.count()
        self._threads = BackgroundThreads()
        self.stats = {logical_id: AsyncStats() for logical_id in function_arns}

    def config(self, logical_id: str) -> AsyncConfig:
        return self._configs.get(logical_id, AsyncConfig())

    def start(self) -> None:
        for logical_id, function_queue in self._queues.items():
            for _ in range(self._workers_of(logical_id)):
                self._threads.start(self._dispatch_forever, logical_id, function_queue)

    def stop(self, timeout: float) -> None:
        """Events still queued are dropped with the stack."""
        self._threads.stop(timeout)

    def submit(self, logical_id: str, event: Any) -> str:
        """Queue the event (KeyError: no such function); its request id, as Invoke returns it."""
        function_queue = self._queues[logical_id]
        queued = _QueuedEvent(str(uuid.uuid4()), event, time.monotonic())
        self.stats[logical_id].add(accepted=1)
        self._put(function_queue, queued, queued.accepted_at)
        return queued.request_id

    def backlog(self, functions: Iterable[str] | None = None) -> int:
        """Events queued, waiting for a retry or running, of `functions` (default: all)."""
        names = self._queues if functions is None else functions
        total = 0
        for name in names:
            function_queue = self._queues[name]
            with function_queue.changed:
                total += len(function_queue.due) + function_queue.running
        return total

    def finished(self, functions: Iterable[str]) -> int:
        """Events of `functions` ended so far (succeeded or given up on): only ever grows."""
        total = 0
        for name in functions:
            counts = self.stats[name].to_json()
            total += (
                counts["succeeded"] + counts["retries_exhausted"] + counts["event_age_exceeded"]
            )
        return total

    def report(self) -> dict[str, Any]:
        return {
            logical_id: {**stats.to_json(), "backlog": self.backlog([logical_id])}
            for logical_id, stats in self.stats.items()
        }

    def _put(self, function_queue: _FunctionQueue, queued: _QueuedEvent, due: float) -> None:
        with function_queue.changed:
            heapq.heappush(function_queue.due, (due, next(self._order), queued))
            function_queue.changed.notify()

    def _next_due(self, function_queue: _FunctionQueue) -> _QueuedEvent | None:
        """The first event due now (counted as running), or None after a short idle wait."""
        with function_queue.changed:
            now = time.monotonic()
            if function_queue.due and function_queue.due[0][0] <= now:
                function_queue.running += 1
                return heapq.heappop(function_queue.due)[2]
            wait = function_queue.due[0][0] - now if function_queue.due else _IDLE_WAIT_SECONDS
            function_queue.changed.wait(min(wait, _IDLE_WAIT_SECONDS))
            return None

    def _dispatch_forever(self, logical_id: str, function_queue: _FunctionQueue) -> None:
        while not self._threads.stopping.is_set():
            queued = self._next_due(function_queue)
            if queued is None:
                continue
            try:
                self._attempt(logical_id, function_queue, queued)
            except PoolClosed:
                return
            finally:
                with function_queue.changed:
                    function_queue.running -= 1

    def _attempt(
        self, logical_id: str, function_queue: _FunctionQueue, queued: _QueuedEvent
    ) -> None:
        config = self.config(logical_id)
        stats = self.stats[logical_id]
        age = (time.monotonic() - queued.accepted_at) * self._time_scale
        if age > config.maximum_event_age_seconds:
            stats.add(event_age_exceeded=1)
            self._give_up(logical_id, queued, EVENT_AGE_EXCEEDED)
            return
        invocation = self._try_invoke(logical_id, queued.event, SLOT_WAIT_SECONDS)
        if invocation is None:
            queued.throttles += 1
            stats.add(throttled=1)
            delay = min(
                THROTTLE_FIRST_DELAY_SECONDS * 2 ** (queued.throttles - 1),
                THROTTLE_MAX_DELAY_SECONDS,
            )
            self._put(function_queue, queued, time.monotonic() + delay / self._time_scale)
            return
        if self._threads.stopping.is_set():
            return  # the stack stopped the function's workers mid-invocation: not its failure
        queued.invoke_count += 1
        queued.last = invocation
        stats.add(attempts=1)
        if invocation.ok:
            stats.add(succeeded=1)
            if config.on_success is not None:
                self._send(logical_id, config.on_success, queued, SUCCESS)
            return
        retries = queued.invoke_count - 1
        if retries >= config.maximum_retry_attempts:
            stats.add(retries_exhausted=1)
            self._give_up(logical_id, queued, RETRIES_EXHAUSTED)
            return
        stats.add(retried=1)
        delay = RETRY_DELAYS_SECONDS[min(retries, len(RETRY_DELAYS_SECONDS) - 1)]
        self._put(function_queue, queued, time.monotonic() + delay / self._time_scale)

    def _give_up(self, logical_id: str, queued: _QueuedEvent, condition: str) -> None:
        destination = self.config(logical_id).on_failure
        error = (queued.last.error or {}) if queued.last is not None else {}
        logger.warning(
            "%s: asynchronous event %s discarded (%s after %d attempts, last: %s)%s",
            logical_id,
            queued.request_id,
            condition,
            queued.invoke_count,
            error.get("errorType", "-"),
            "" if destination is None else ": its record goes to the on-failure destination",
        )
        if destination is None:
            self.stats[logical_id].add(discarded_without_destination=1)
            return
        self._send(logical_id, destination, queued, condition)

    def _send(
        self, logical_id: str, destination: str, queued: _QueuedEvent, condition: str
    ) -> None:
        record = invocation_record(
            request_id=queued.request_id,
            function_arn=self._arns[logical_id],
            condition=condition,
            invoke_count=queued.invoke_count,
            event=queued.event,
            last=queued.last,
        )
        failure = self._send_record(logical_id, destination, record)
        if failure is None:
            self.stats[logical_id].add(sent_to_destination=1)
            return
        self.stats[logical_id].add(destination_delivery_failures=1)
        logger.warning("%s: record of %s not delivered: %s", logical_id, queued.request_id, failure)


def accepted(request_id: str) -> Invocation:
    """What an asynchronous invoke answers its caller (the event bus, a schedule): accepted."""
    return Invocation(request_id, result=None)
