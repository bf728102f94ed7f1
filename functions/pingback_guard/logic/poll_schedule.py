"""When to look for a task's result: when it is likely ready, within the provider's rate rules.

2captcha: the first res.php check no earlier than 5 s after submit (10-20 s for reCAPTCHA), then
no more often than every 5 s per task; keys asking more than 20 times per CAPTCHA get blocked.
Pure rules: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pingback_guard.domain.task import DueTask
from pingback_guard.kinds.registry import expected_solve_seconds
from pingback_guard.logic.sweep_grid import on_grid

EARLIEST_FIRST_CHECK_SECONDS = {"userrecaptcha": 15.0}
DEFAULT_EARLIEST_FIRST_CHECK_SECONDS = 5.0
# A check after `elapsed` seconds is followed by one `GAP_FRACTION * elapsed` later: a token found
# late is at most that much older than it had to be, and a task costs O(log) checks, not one per
# 5 s. This is the read-through's rule (a waiting worker's GET, one request per task), and the
# poller's once a task's young checks are spent.
GAP_FRACTION = 0.4
# Below 2captcha's 20 per CAPTCHA; after these the task is checked once more at expiry.
MAX_CHECKS_PER_TASK = 16
# The poller's first checks of a task, every min gap from its early first check (its "young"
# checks): 12 cover 55 s, from 15 s to 70 s for reCAPTCHA at a 25 s median (its 99th percentile
# at sigma 0.45; with 8, the 4% solved after 55 s waited 22 s for the growing gap). A task also
# rides along in requests made for other tasks from the earliest moment the provider allows:
# ids= makes them one request for every due task, so at volume a young task costs little and a
# lost pingback's token is found within a sweep of its finish (a push worker never asks). The rest
# of its checks follow the growing gaps (MAX_CHECKS_PER_TASK in all).
RIDING_CHECKS = 12
# An invocation sweeps to its end (55 s) while the stack had a task to check this recently, not
# once: a task submitted after an idle invocation's one sweep waited for the next scheduled
# minute, checked up to 45 s after its first check was due (a lost pingback's token that old at a
# push worker). Ten minutes of 55 s at 128 MB after the last task: USD 0.001.
KEEP_SWEEPING_AFTER_WORK_SECONDS = 600.0
# How far ahead the poller looks for tasks that may ride along in a request it makes anyway.
RIDE_AHEAD_SECONDS = 60.0
# The poller's first check comes early: a task solved before it waits for it, so with the first
# check at the median a lost pingback's token solved at a third of the median was two thirds of
# it old when found (a p95 of 13 s at a 25 s median). At the 10th percentile (half the expected
# median until learned: the 10th percentile of a lognormal with sigma 0.55) few tasks are solved
# before it, and those little before; its young checks every min gap from there find the rest
# within a gap of their finish. At volume one ids= request a sweep carries every young task;
# alone, a task costs a check per min gap between its first check and its pingback.
FIRST_CHECK_QUANTILE = 0.1
FIRST_CHECK_FRACTION_OF_EXPECTED = 0.5
MIN_SAMPLES = 20
SAMPLES_KEPT = 200
# A task found ready long after its last look says little about its solve time: the middle of a
# wide window is mostly the poller's own lateness (a backlog, an outage), and learning it would
# defer the next tasks' first checks further still (the soak run learned its way to minutes).
MAX_LEARNING_WINDOW_SECONDS = 30.0


def earliest_first_check(method: str | None) -> float:
    return EARLIEST_FIRST_CHECK_SECONDS.get(method or "", DEFAULT_EARLIEST_FIRST_CHECK_SECONDS)


def first_poll_delay(
    method: str, expected_solve_seconds: float, callback_timeout_seconds: float
) -> float:
    """Seconds after submit of the stack's first check: early (FIRST_CHECK_FRACTION_OF_EXPECTED
    of the expected solve time), never later than the callback timeout, never earlier than the
    provider allows."""
    early = FIRST_CHECK_FRACTION_OF_EXPECTED * expected_solve_seconds
    return max(earliest_first_check(method), min(early, callback_timeout_seconds))


@dataclass
class SolveTimes:
    """Solve times the poller observed, per method; defaults until enough are seen.

    A sample is the middle of the window in which the provider finished a task the poller found
    ready (between its last "not ready" and the answer).
    """

    default_seconds: float
    samples: dict[str, deque[float]] = field(default_factory=dict)

    def observe(self, method: str | None, seconds: float) -> None:
        if method and math.isfinite(seconds) and seconds >= 0:
            kept = self.samples.setdefault(method, deque(maxlen=SAMPLES_KEPT))
            kept.append(round(seconds, 1))

    def observe_window(
        self, method: str | None, submitted_at: float, earliest: float, latest: float
    ) -> None:
        """A task found solved, finished between ``earliest`` and ``latest``: learned from only
        if that window is narrow."""
        if latest - earliest <= MAX_LEARNING_WINDOW_SECONDS:
            self.observe(method, (earliest + latest) / 2 - submitted_at)

    def first_check(self, method: str | None) -> float:
        """Seconds after submit of the poller's first check of the method's task: early."""
        return self._quantile(method, FIRST_CHECK_QUANTILE, FIRST_CHECK_FRACTION_OF_EXPECTED)

    def _quantile(self, method: str | None, fraction: float, of_expected: float) -> float:
        """The learned solve time below which ``fraction`` of the samples lie; until enough are
        seen, ``of_expected`` times the kind's expected (median) solve time. Never before the
        provider allows a check."""
        seen = sorted(self.samples.get(method or "", ()))
        if len(seen) < MIN_SAMPLES:
            expected = expected_solve_seconds(method, self.default_seconds)
            return max(earliest_first_check(method), of_expected * expected)
        index = min(len(seen) - 1, math.ceil(fraction * len(seen)) - 1)
        return max(earliest_first_check(method), seen[index])

    def load(self, stored: Mapping[str, Iterable[float]]) -> None:
        for method, values in stored.items():
            for value in values:
                self.observe(method, float(value))

    def dump(self) -> dict[str, list[float]]:
        return {method: list(values) for method, values in self.samples.items() if values}


@dataclass(frozen=True)
class CheckSchedule:
    min_gap_seconds: float
    max_gap_seconds: float
    sweep_interval_seconds: float | None = None
    """The poller's sweep grid (logic/sweep_grid.py); None: a schedule no sweep follows."""

    def next_check(self, submitted_at: float, now: float, first_check_at: float) -> float:
        """After a "not ready" at ``now`` (a check riding along early): the first-check moment if
        it is still ahead, else a gap that grows with the task's age."""
        if first_check_at >= now + self.min_gap_seconds:
            return first_check_at
        return self.after_check(submitted_at, now)

    def after_check(self, submitted_at: float, checked_at: float) -> float:
        """When a task checked at ``checked_at`` may be checked again."""
        return checked_at + self.gap(checked_at - submitted_at)

    def gap(self, age_seconds: float) -> float:
        """Seconds to wait after a check of a task this old."""
        wanted = GAP_FRACTION * max(0.0, age_seconds)
        return min(self.max_gap_seconds, max(self.min_gap_seconds, wanted))

    @staticmethod
    def exhausted(checks_done: int) -> bool:
        return checks_done >= MAX_CHECKS_PER_TASK

    def may_ride(self, task: DueTask, now: float) -> bool:
        """May this task, not due yet, be asked about in a request made for others? From the
        earliest moment the provider allows, a min gap after its last check, within its young
        checks."""
        last = task.last_checked_at
        return (
            now >= task.submitted_at + earliest_first_check(task.method)
            and (last is None or now - last >= self.min_gap_seconds)
            and task.poll_attempts < RIDING_CHECKS
        )

    def poller_after_check(self, task: DueTask, checked_at: float, first_check_at: float) -> float:
        """The poller's next check of a task checked at ``checked_at``: a min gap later while it
        is young (from its first check on, within its first RIDING_CHECKS checks), else the
        growing gap."""
        if checked_at >= first_check_at and task.poll_attempts <= RIDING_CHECKS:
            return self.young_check_after(checked_at)
        return self.after_check(task.submitted_at, checked_at)

    def young_check_after(self, checked_at: float) -> float:
        """A young task's next check: a min gap after the sweep grid moment of its check."""
        due_at = checked_at + self.min_gap_seconds
        interval = self.sweep_interval_seconds
        return due_at if interval is None else on_grid(due_at, interval)


@dataclass(frozen=True)
class PollPolicy:
    retention_seconds: float
    backoff_base_seconds: float
    backoff_max_seconds: float
    max_requests_per_sweep: int
    ids_per_request: int
    deadline_margin_seconds: float
    sweep_interval_seconds: float
    run_seconds: float
    batch_probe_seconds: float
    # Below botocore's connection pool (10), so no write waits for a connection.
    store_writers: int = 8
    # res.php requests in flight at once (the provider client keeps as many connections). 2captcha's
    # rules limit checks per task, not requests at once; one-id requests (images, GeeTest) at up to
    # a second each need many in flight under load (PollerRequestWorkers).
    request_workers: int = 4
    # The slowest one DynamoDB request and one res.php request may take (settings derive them
    # from the clients' timeouts and retries): a call starts only with that much time left.
    store_call_seconds: float = 0.0
    provider_call_seconds: float = 0.0

    @property
    def slowest_call_seconds(self) -> float:
        return max(self.store_call_seconds, self.provider_call_seconds)

    @property
    def schedule(self) -> CheckSchedule:
        return CheckSchedule(
            self.backoff_base_seconds, self.backoff_max_seconds, self.sweep_interval_seconds
        )

    def expires_at(self, task: DueTask) -> float:
        return task.submitted_at + self.retention_seconds

    def is_expired(self, task: DueTask, now: float) -> bool:
        return now >= self.expires_at(task)

    @property
    def max_tasks_per_sweep(self) -> int:
        return self.max_requests_per_sweep * self.ids_per_request
