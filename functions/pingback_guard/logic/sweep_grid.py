"""When the poller sweeps: on a grid of the sweep interval counted from the epoch, so anyone who
knows the interval knows when the next sweep falls (a waiting worker's hint names it).

A holder's first sweep comes when it takes the lease; every later one at the next grid moment.
A task's young checks (every min gap) are due a min gap after the *grid moment* of the sweep that
checked it, when that sweep started within SWEEP_LATE_SECONDS of it: counted from the sweep's
real start, a check due a few milliseconds after the next grid moment missed that sweep and
waited a whole interval. Pure rules: no I/O, no clock.
"""

from __future__ import annotations

import math

# How late after its grid moment a sweep may start and still count as on it (a sleep's overshoot,
# a loaded CPU). The provider then sees a task's young checks at least min gap minus this apart.
SWEEP_LATE_SECONDS = 1.0
# How long after its grid moment a sweep's results are in the table: its due-task query, one
# res.php request and the writes (a fresh stack's sweeps took 0.2-0.6 s).
SWEEP_RESULTS_SECONDS = 1.0


def next_sweep_after(moment: float, interval: float) -> float:
    """The first grid moment strictly after ``moment``."""
    return (math.floor(moment / interval) + 1) * interval


def sweep_at_or_after(moment: float, interval: float) -> float:
    """The first grid moment at or after ``moment``: the sweep that checks a task due then."""
    return math.ceil(moment / interval) * interval


def on_grid(due_at: float, interval: float) -> float:
    """A check due at ``due_at`` counted from a sweep's real start: due at the grid moment
    before it when that start was at most SWEEP_LATE_SECONDS late."""
    moment = math.floor(due_at / interval) * interval
    return moment if due_at - moment <= SWEEP_LATE_SECONDS else due_at
