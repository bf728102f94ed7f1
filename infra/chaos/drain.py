"""When a chaos run may be judged: deadlines that follow the run, not the plan.

The workload may outlast its plan (the stack answers submits more slowly than scheduled), so the
drain starts when the last submit has ended, and the verdict waits until the stack has gone
quiet: every task the provider accepted is final in the table, or is past the point where the
stack itself promises an answer (its retention window from submit, plus one sweep and some
grace), and the dead-letter queue (visible and in-flight messages) is empty. A task still PENDING
in the verdict then means the stack gave up on it, never that the harness stopped waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FINAL_STATUSES = frozenset({"SOLVED", "FAILED", "EXPIRED"})


@dataclass(frozen=True)
class Observation:
    """One look at the provider's truth, the table and the dead-letter queue."""

    truth: Sequence[Mapping[str, Any]]
    items: Mapping[str, Mapping[str, Any]]
    dead_letters: int
    requests_in_flight: int = 0
    """Requests the gateway has read and not answered: a queued pingback can still settle a task."""


@dataclass(frozen=True)
class DrainPolicy:
    retention_seconds: float
    """The stack's own promise: a task is final (solved, failed, EXPIRED) this long after submit."""
    grace_seconds: float
    """Slack on top of it: a poller sweep, a busy machine."""
    not_before: float
    """No verdict before this moment (epoch seconds): the end of the last fault window."""
    dead_letter_patience_seconds: float = 0.0
    """How long the stack may keep retrying a dead letter before it parks it."""

    def settle_by(self, submitted_at: float) -> float:
        return submitted_at + self.retention_seconds + self.grace_seconds


@dataclass(frozen=True)
class DrainState:
    final: int
    waiting: int
    """Not final yet, and the stack may still settle them."""
    given_up: int
    """Not final, and past the stack's own deadline for them."""
    dead_letters: int
    requests_in_flight: int = 0

    @property
    def quiet(self) -> bool:
        return self.waiting == 0 and self.dead_letters == 0 and self.requests_in_flight == 0

    @property
    def still_working(self) -> bool:
        """Messages or requests the stack has not finished with."""
        return self.dead_letters > 0 or self.requests_in_flight > 0


def drain_state(observation: Observation, now: float, policy: DrainPolicy) -> DrainState:
    final = waiting = given_up = 0
    for task in observation.truth:
        item = observation.items.get(str(task["id"]))
        if item is not None and item.get("status") in FINAL_STATUSES:
            final += 1
        elif now < policy.settle_by(_submitted_at(task, item)):
            waiting += 1
        else:
            given_up += 1
    return DrainState(
        final, waiting, given_up, observation.dead_letters, observation.requests_in_flight
    )


def _submitted_at(task: Mapping[str, Any], item: Mapping[str, Any] | None) -> float:
    """The stack's submit time if it has one (retention counts from it), else the provider's."""
    if item is not None and item.get("submitted_at") is not None:
        return float(item["submitted_at"])
    return float(task["submitted_at"])


@dataclass(frozen=True)
class DrainOutcome:
    reason: str
    """"quiet": every task final and the queue empty; "deadline": the stack gave up on some."""
    workload_ended_at: float
    ended_at: float
    state: DrainState


def wait_until_quiet(
    observe: Callable[[], Observation],
    workload_running: Callable[[], bool],
    policy: DrainPolicy,
    *,
    every_seconds: float,
    on_observation: Callable[[Observation, DrainState], None] = lambda _o, _s: None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], object] = time.sleep,
) -> DrainOutcome:
    """Watch the run until the workload has ended and the stack has gone quiet.

    Every task's own deadline bounds the wait; a dead-letter queue that never empties, or requests
    the gateway still holds, are waited for until the last submit's deadline (the workload's end,
    plus retention and grace) plus the time the stack takes to park a message that keeps failing.
    """
    workload_ended_at: float | None = None
    while True:
        sleep(every_seconds)
        now = clock()
        observation = observe()
        state = drain_state(observation, now, policy)
        on_observation(observation, state)
        if workload_ended_at is None:
            if workload_running():
                continue
            workload_ended_at = now
        if now < policy.not_before:
            continue
        if state.quiet:
            return DrainOutcome("quiet", workload_ended_at, now, state)
        patience = policy.dead_letter_patience_seconds if state.still_working else 0.0
        if state.waiting == 0 and now >= policy.settle_by(workload_ended_at) + patience:
            return DrainOutcome("deadline", workload_ended_at, now, state)
