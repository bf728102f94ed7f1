"""The poller's lease: one sweeper at a time, and what it learned, kept between invocations."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PollerLease:
    """``acquired``: this holder may sweep until ``held_until``; else someone else holds it."""

    acquired: bool
    held_until: float
    solve_samples: dict[str, list[float]] = field(default_factory=dict)
    busy_at: float | None = None
    """When a holder last had a task to check: None if never."""
