"""Fires the template's rate() schedules, their period divided by the time scale.

Each fire is an asynchronous invocation, as EventBridge Scheduler's is: the stack hands it to the
function's asynchronous queue (infra/local/lambda_/async_invocations.py), where Lambda's retries,
event age and on-failure destination apply; a long invocation does not hold the next one back.

Each fire is authorized first, as on AWS: a Scheduler schedule invokes with its Target.RoleArn
(lambda:InvokeFunction on the function: https://docs.aws.amazon.com/lambda/latest/dg/with-eventbridge-scheduler.html#using-eventbridge-scheduler-execution-role),
a rule's schedule as events.amazonaws.com by the function's resource policy. A refused fire
invokes nothing and is counted in `refused` (Scheduler's retries and dead-letter event are not
emulated).
"""

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from infra.local.apigateway.gateway import Invoker
from infra.local.lambda_.pool import PoolClosed
from infra.local.lambda_.triggers import ScheduleSource
from infra.local.runtime.aws import ACCOUNT_ID
from infra.local.runtime.threads import BackgroundThreads

logger = logging.getLogger(__name__)


def scheduled_event(schedule: ScheduleSource, region: str, fired_at: float) -> Any:
    """The event the function receives: the target's Input, or the default notification."""
    if schedule.input is not None:
        return json.loads(schedule.input)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": schedule.event_source,
        "account": ACCOUNT_ID,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(fired_at)),
        "region": region,
        "resources": [schedule.arn],
        "detail": {},
    }


class ScheduleRunner:
    def __init__(
        self,
        schedules: list[ScheduleSource],
        invoke: Invoker,
        time_scale: float,
        region: str,
        refusal: Callable[[ScheduleSource], str | None] | None = None,
    ) -> None:
        """`refusal`: why AWS would not let the schedule invoke its target (None: it may)."""
        self._schedules = schedules
        self._invoke = invoke
        self._refusal = refusal
        self._time_scale = time_scale
        self._region = region
        self._threads = BackgroundThreads()
        self._paused: set[str] = set()
        self.fired: dict[str, int] = {schedule.logical_id: 0 for schedule in schedules}
        self.refused: dict[str, int] = {schedule.logical_id: 0 for schedule in schedules}

    def start(self) -> None:
        for schedule in self._schedules:
            self._threads.start(self._run, schedule)

    def stop(self, timeout: float) -> None:
        self._threads.stop(timeout)

    def set_enabled(self, enabled: bool) -> None:
        """Disable (or enable again) every schedule, as `aws scheduler update-schedule` would."""
        self._paused = set() if enabled else {schedule.logical_id for schedule in self._schedules}

    def _run(self, schedule: ScheduleSource) -> None:
        period = schedule.interval_seconds / self._time_scale
        next_fire = time.monotonic() + period
        while not self._threads.stopping.wait(max(0.0, next_fire - time.monotonic())):
            if schedule.logical_id not in self._paused:
                self.fired[schedule.logical_id] += 1
                if self._authorized(schedule):
                    threading.Thread(target=self._fire, args=(schedule,), daemon=True).start()
            next_fire = max(next_fire + period, time.monotonic())

    def _authorized(self, schedule: ScheduleSource) -> bool:
        refusal = None if self._refusal is None else self._refusal(schedule)
        if refusal is not None:
            self.refused[schedule.logical_id] += 1
            logger.warning("%s: not invoked: %s", schedule.logical_id, refusal)
        return refusal is None

    def _fire(self, schedule: ScheduleSource) -> None:
        try:
            invocation = self._invoke(
                schedule.function, scheduled_event(schedule, self._region, time.time())
            )
        except PoolClosed:
            return
        if not invocation.ok and not self._threads.stopping.is_set():  # a stop ends its invocation
            error = invocation.error or {}
            logger.warning(
                "%s: scheduled invocation failed: %s: %s (trace in the function's log)",
                schedule.logical_id,
                error.get("errorType"),
                error.get("errorMessage"),
            )
