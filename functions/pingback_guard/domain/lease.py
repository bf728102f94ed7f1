"""The poller's lease: one sweeper at a time, and what it learned, kept between invocations."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True)
class PollerLease:
    """``acquired``: this holder may sweep until ``held_until``; else someone else holds it."""

    acquired: bool
    held_until: float
    solve_samples: dict[str, list[float]] = field(default_factory=dict)
    busy_at: float | None = None
    """When a holder last had a task to check: None if never."""


class PollerStart(StrEnum):
    """Why a poller invocation runs, from its event's ``source``: what it does when another
    invocation holds the lease."""

    SCHEDULED = "pingback-guard.scheduler"
    """The schedule's (template Input): gives way to a holder, but for one about to stop."""
    WOKEN = "pingback-guard.wake"
    """Started by a submit while no invocation swept on: takes over from a holder that stops
    before it would, and has work from its start (the task just recorded), so it sweeps to its
    end."""
    HELPER = "pingback-guard.fan-out"
    """Started by the main holder while its sweeps fall behind: sweeps one group of due shards
    under that group's own lease (``group`` in the event), gives way to a holder of it."""
    ALONE = "other"
    """Any other event (an operator's or a test's invoke): gives way to a holder."""

    @classmethod
    def of(cls, event: object) -> PollerStart:
        source = event.get("source") if isinstance(event, dict) else None
        for start in (cls.SCHEDULED, cls.WOKEN, cls.HELPER):
            if source == start.value:
                return start
        return cls.ALONE


@dataclass(frozen=True)
class HelperLoad:
    """A helper group's lease, as the main holder reads it each sweep."""

    held_until: float
    load_seconds: float
    """Its last sweep's CPU time over the function's share of a vCPU (the wall time the work
    would take with nothing to wait for), at most the sweep's own duration."""


def helper_group_of(event: object, groups: int) -> int | None:
    """The helper group a fan-out event names, if it is one of 1..``groups``."""
    group = event.get("group") if isinstance(event, dict) else None
    if isinstance(group, int) and not isinstance(group, bool) and 1 <= group <= groups:
        return group
    return None
