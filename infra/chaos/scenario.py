"""What a chaos run does and when: workload size, fault windows, timings, simulator settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from infra.chaos.workload import SUBMIT_THREADS

# template.yaml's DeadLetterQueue VisibilityTimeout.
DEAD_LETTER_VISIBILITY_SECONDS = 180


@dataclass(frozen=True)
class Window:
    """A fault active from ``start`` for ``length`` seconds after the run starts."""

    start: float
    length: float

    @property
    def end(self) -> float:
        return self.start + self.length

    def to_json(self) -> dict[str, float]:
        return {"start": self.start, "end": self.end}


@dataclass(frozen=True)
class AlarmFaults:
    """Faults injected only so that their alarm must fire (infra.chaos.alarm_check)."""

    parked_message_at: float
    """A message replay can never apply goes to the dead-letter queue (parked later)."""
    expired_task: Window
    """A registered task whose res.php answers fail (5xx) past its retention."""
    poller_stopped: Window
    """The poller's schedule is disabled."""
    account_error: Window
    """The provider refuses every account (zero balance) for submits."""
    first_account_down: Window = Window(0, 0)
    """Only the first provider account refuses submits: the run goes on through the second,
    whose thread plan alone is too small for the workload (ProviderThreadsBusyAlarm)."""


@dataclass(frozen=True)
class AsyncFaults:
    """Failures of asynchronously invoked functions, each retried by Lambda and kept in the
    function's failure queue, whose alarm must fire (infra.chaos.async_faults)."""

    consumer_crash: Window
    """The example result consumer crashes right after its result write."""
    forward_target_down: Window
    """The workers' own pingback receiver (the forwarder's target) answers 503."""
    poller_failing: Window
    """Every poller invocation, woken or scheduled, crashes."""
    forwarded_tasks: int = 30
    """Tasks submitted through in.php with a pingback= to the loopback target."""
    forwarded_over_seconds: float = 50.0

    def windows(self) -> list[tuple[str, Window, str]]:
        """Each fault, its window, and the function whose failure queue must report it."""
        return [
            ("result consumer crashing", self.consumer_crash, "ResultConsumerFunction"),
            ("forward target down", self.forward_target_down, "PingbackForwardFunction"),
            ("poller failing", self.poller_failing, "PollerFunction"),
        ]

    @property
    def end(self) -> float:
        return max(window.end for _, window, _ in self.windows())


@dataclass(frozen=True)
class Scenario:
    name: str
    tasks: int
    seed: int
    submit_seconds: float
    gateway_down: Window
    table_down: Window
    dead_letter_down: Window
    crash_rate: float
    slow_store_rate: float
    slow_store_seconds: float
    late_pending_rate: float
    late_pending_seconds: float
    callback_timeout_seconds: float
    retention_seconds: float
    poll_every_seconds: float
    backoff_base_seconds: float
    backoff_max_seconds: float
    simulator: dict[str, Any]
    drain_grace_seconds: float
    submit_threads: int = SUBMIT_THREADS
    """Workers submitting at once: a submit behind schedule waits for one of them."""
    workers_per_function: int = 3
    workers_by_function: Mapping[str, int] = field(default_factory=dict)
    progress_every_seconds: float = 2.0
    """How often the run looks at the table, the queues and the truth (a Scan of the table)."""
    alarm_faults: AlarmFaults | None = None
    """None: a clean run, in which no alarm may fire."""
    async_faults: AsyncFaults | None = None
    attacker: bool = True
    """Forged pingbacks (other tasks' URLs, future ids, made-up secrets) during the workload."""
    waiting_every: int = 10
    """One accepted task in this many gets a worker that waits for its token with the client."""

    @property
    def faults_end(self) -> float:
        windows = (self.gateway_down, self.table_down, self.dead_letter_down)
        async_end = self.async_faults.end if self.async_faults else 0.0
        return max(self.submit_seconds, async_end, *(window.end for window in windows))

    def parameter_overrides(self) -> dict[str, str]:
        return {
            "CallbackTimeoutSeconds": _number(self.callback_timeout_seconds),
            "RetentionSeconds": _number(self.retention_seconds),
            "PollBackoffBaseSeconds": _number(self.backoff_base_seconds),
            "PollBackoffMaxSeconds": _number(self.backoff_max_seconds),
            "PollRateMinutes": "1",
            # Time-scaling shrinks the DLQ visibility timeout (180 s) as much as the schedule, so
            # the number of receives before parking must cover the table outage at that pace:
            # 10 x 15 s here, like 5 x 180 s = 15 min on AWS.
            "MaxReceiveCount": "10",
            # The forwarded tasks' pingback receiver is on 127.0.0.1 (async_faults).
            "AllowLoopbackPingbacks": "true" if self.async_faults else "false",
        }

    @property
    def parking_after_seconds(self) -> float:
        """How long a dead letter that keeps failing stays in the DLQ before it is parked."""
        visibility = DEAD_LETTER_VISIBILITY_SECONDS / self.time_scale
        return visibility * int(self.parameter_overrides()["MaxReceiveCount"])

    @property
    def time_scale(self) -> float:
        """The template's 1-minute schedule, run every ``poll_every_seconds``."""
        return 60.0 / self.poll_every_seconds

    def with_size(self, tasks: int | None, seed: int | None) -> Scenario:
        return replace(self, tasks=tasks or self.tasks, seed=self.seed if seed is None else seed)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _simulator(seed: int, pingback_timeout: float) -> dict[str, Any]:
    return {
        "seed": seed,
        "solve_time": {
            "kind": "lognormal",
            "median_seconds": 12,
            "sigma": 0.8,
            "min_seconds": 0.5,
            "max_seconds": 60,
        },
        "unsolvable_rate": 0.05,
        "result_retention_seconds": 600,
        "pingback_method": "mixed",
        "pingback_timeout_seconds": pingback_timeout,
        "faults": {
            "pingback_drop_rate": 0.05,
            "pingback_duplicate_rate": 0.1,
            "pingback_reorder_window": 2,
            "pingback_delay": [0, 3],
            "res_5xx_rate": 0.05,
            "res_slow_rate": 0.02,
            "res_slow_seconds": 3,
        },
    }


def _two_accounts(simulator: Mapping[str, Any], threads: int) -> dict[str, Any]:
    """Two CaptchaAI accounts of ``threads`` threads each: together above the workload's
    solving peak, one alone below it."""
    return {**simulator, "threads": threads, "extra_accounts": [{"threads": threads}]}


CI = Scenario(
    name="ci",
    tasks=300,
    seed=20261129,
    submit_seconds=60,
    gateway_down=Window(10, 30),
    table_down=Window(50, 60),
    dead_letter_down=Window(65, 20),
    crash_rate=0.05,
    slow_store_rate=0.05,
    slow_store_seconds=3,
    late_pending_rate=0.1,
    late_pending_seconds=1.5,
    callback_timeout_seconds=20,
    retention_seconds=150,
    poll_every_seconds=5,
    backoff_base_seconds=5,
    backoff_max_seconds=20,
    # 5 submits/s solving 16.5 s on average (the lognormal's mean): about 80 at once, 40 when a
    # loaded machine halves the pace: the second account alone, holding about half of them when
    # the first stops, fills within the first's 15-s outage either way.
    simulator=_two_accounts(_simulator(20261129, pingback_timeout=2), threads=40),
    drain_grace_seconds=30,
)

DEMO = replace(
    CI,
    name="demo",
    tasks=150,
    submit_seconds=60,
    gateway_down=Window(10, 15),
    table_down=Window(40, 30),
    dead_letter_down=Window(50, 10),
    retention_seconds=90,
    # 2.5 submits/s solving 11 s on average: about 28 at once.
    simulator=_two_accounts(
        {**CI.simulator, "solve_time": {**CI.simulator["solve_time"], "median_seconds": 8}},
        threads=20,
    ),
)

CI_ALARM_FAULTS = AlarmFaults(
    parked_message_at=1,
    expired_task=Window(2, 8),
    poller_stopped=Window(15, 40),
    account_error=Window(56, 3),
    first_account_down=Window(40, 15),
)
# Each window long enough that the events arriving in its first part fail Lambda's three
# attempts (at t, t + 5 s and t + 15 s at the runs' time scale) and reach the failure queue.
# The consumer crashes from the table's return (110 s) while the dead-letter queue's results
# and the poller's recoveries flood in (the queue drains until about 135 s); an event is kept
# only if all three of its attempts fall inside the window (with 110-155 s, a run here kept 6
# and the alarm fired at 149 s: 160 s leaves more). From 20 to 40 s, with the gateway down and
# the schedule stopped, only a few replays wrote results, and a loaded CI run's first records
# reached the queue after the alarm's detection time.
# The forwarded tasks' results reach the forwarder only when the gateway's outage (10-40 s) and
# the table's (50-110 s) let them be stored: from 40 to 50 s, and in the flood from 110 s. Only
# the forwarded submits sent before 10 s or from 40 to 50 s are accepted (the others meet the
# gateway's outage or the table's). With the receiver down from 5 to 100 s, a loaded make test
# had 2 accepted, both stored after 110 s: no forward failed. Down from 5 to 160 s, a result
# stored before 145 s is kept.
CI_ASYNC_FAULTS = AsyncFaults(
    consumer_crash=Window(110, 50),
    forward_target_down=Window(5, 155),
    poller_failing=Window(50, 12),
)
CI = replace(CI, alarm_faults=CI_ALARM_FAULTS, async_faults=CI_ASYNC_FAULTS)
# The demo's gateway is down only from 10 to 25 s: its results flow from 20 s on.
DEMO = replace(
    DEMO,
    alarm_faults=CI_ALARM_FAULTS,
    async_faults=replace(
        CI_ASYNC_FAULTS, consumer_crash=Window(20, 20), forward_target_down=Window(20, 30)
    ),
)

# 16.7 submits/s solving 16.5 s on average: about 275 at once.
FULL = replace(
    CI,
    name="full",
    tasks=2000,
    submit_seconds=120,
    simulator=_two_accounts(CI.simulator, threads=200),
)

_NO_OUTAGE = Window(0, 0)
# Shorter than CI's: 60 tasks over 30 s, none solving longer than 30 s, still several of the
# longest alarm periods (300 s, 25 s at the run's time scale) of traffic for an alarm to misfire.
CLEAN = replace(
    CI,
    name="clean",
    tasks=60,
    submit_seconds=30,
    gateway_down=_NO_OUTAGE,
    table_down=_NO_OUTAGE,
    dead_letter_down=_NO_OUTAGE,
    crash_rate=0.0,
    slow_store_rate=0.0,
    late_pending_rate=0.0,
    simulator=_two_accounts(
        {
            **CI.simulator,
            "solve_time": {**CI.simulator["solve_time"], "max_seconds": 30},
            "unsolvable_rate": 0.0,
            "faults": {},
        },
        threads=1000,
    ),
    alarm_faults=None,
    async_faults=None,
    attacker=False,
)


# 10,000 tasks through the same faults, paced to what the local stack sustains on a shared
# 2-core machine (docs/chaos-soak.md). Submits outrunning the callbacks (9.2 submits/s against
# 8.2 callbacks/s in one run) build a backlog whose pingbacks time out, and the poller then
# carries thousands of tasks through a loaded moto: paced at 8 a second, with 12 callback workers
# (each crash fault costs a worker a cold start), 8 submit workers for the table outage (a submit
# waits 0.7 s on its retries before the DLQ takes it), 4 example consumers for the result events
# (12,000 deliveries; 3 ran minutes behind on a loaded machine), 16 PushFunction workers (its
# invocations take p50 0.4-0.8 s against the loaded moto and the pipe puts results on the bus in
# pages of dozens after a poll sweep: with 8 workers an event waited p50 0.5 s, p95 2.3 s for
# one, where Lambda scales out). The template's RetentionSeconds
# (600 s, the simulator's own retention), not the CI profile's compressed 150 s: a backlog drains
# before a task is given up. A stack that falls behind stretches the run, never the verdict. The
# table is scanned for progress every 10 s, not 2 s.
SOAK = replace(
    CI,
    name="soak",
    tasks=10_000,
    submit_seconds=1250,
    submit_threads=10,
    workers_by_function={
        "SubmitFunction": 8,
        "CallbackFunction": 12,
        "ResultConsumerFunction": 4,
        "PushFunction": 16,
    },
    retention_seconds=600,
    progress_every_seconds=10.0,
    waiting_every=50,
    # 8 submits/s solving 16.5 s on average: about 130 at once.
    simulator=_two_accounts(CI.simulator, threads=100),
)

PROFILES = {scenario.name: scenario for scenario in (DEMO, CI, FULL, CLEAN, SOAK)}
