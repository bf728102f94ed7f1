"""The account's capacity: a thread plan (tasks solving at once) and a request rate.

CaptchaAI sells plans by threads: "at most N tasks solving at once" per account; the SDK reads
``{"threads": N, "working_threads": M}`` from ``res.php?action=threadsinfo`` (captchaai 1.0.1,
core/orchestrator.py ``get_thread_usage``). What a submit gets when every thread is busy, the
sources disagree on, so it is configurable (``busy_answer``):

- ``zero_balance``: CaptchaAI's API docs, "ERROR_ZERO_BALANCE: You don't have free threads"
  (https://docs.captchaai.com/api/api-error-handling; "NO AVAILABLE THREADS" in
  https://docs.captchaai.com/pages/err_handling), which the SDK's submit reads as "busy": it asks
  threadsinfo and, with working_threads >= threads, retries about 8 s later.
- ``queue``: the SDK's own comment in ``submit_task``, "The CaptchaAI API queues tasks silently
  when all threads are busy"; a queued task starts when a thread frees.
- ``no_slot``: CaptchaAI's blog, "ERROR_NO_SLOT_AVAILABLE ... The new task was rejected rather
  than queued" (https://blog.captchaai.com/captchaai-thread-limit-upgrade-guide), which is also
  2captcha's code for a full queue (https://2captcha.com/2captcha-api#error_handling).

The request rate: CaptchaAI's blog answers HTTP 429 past "max API calls per second to submit/poll
endpoints" (https://blog.captchaai.com/captchaai-concurrent-request-limits) where another of its
posts says "CaptchaAI does not enforce strict per-second rate limits"
(https://blog.captchaai.com/rate-limits-and-throttling): off unless configured.
"""

from __future__ import annotations

import collections
import heapq
import math
import threading
from dataclasses import dataclass
from typing import Final

BUSY_ZERO_BALANCE: Final = "zero_balance"
BUSY_NO_SLOT: Final = "no_slot"
BUSY_QUEUE: Final = "queue"
BUSY_ANSWERS: Final = (BUSY_ZERO_BALANCE, BUSY_NO_SLOT, BUSY_QUEUE)
RATE_WINDOW_SECONDS: Final = 1.0


@dataclass(frozen=True)
class Slot:
    """When a task got its thread, and when it gives it back (its finish)."""

    starts_at: float
    finishes_at: float


class ThreadPlan:
    """N threads; a task holds one from its start until it finishes (solved or not)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._free_at = [0.0] * threads  # a min-heap: when each thread is free again
        self._lock = threading.Lock()

    def reserve(self, now: float, solve_seconds: float, queue: bool) -> Slot | None:
        """A thread for a task taking `solve_seconds`: free now, or (with `queue`) the first to
        free up; None when every thread is busy and the plan does not queue."""
        with self._lock:
            earliest = self._free_at[0]
            if earliest > now and not queue:
                return None
            starts_at = max(now, earliest)
            slot = Slot(starts_at=starts_at, finishes_at=starts_at + solve_seconds)
            heapq.heapreplace(self._free_at, slot.finishes_at)
            return slot

    def working(self, now: float) -> int:
        """Threads solving a task at `now` (a queued task holds none until it starts)."""
        with self._lock:
            return sum(1 for free_at in self._free_at if free_at > now)


class RequestRate:
    """At most `per_second` requests in any one-second window; None admits every request."""

    def __init__(self, per_second: float | None) -> None:
        self._limit = None if per_second is None else max(1, math.floor(per_second))
        self._recent: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def admit(self, now: float) -> bool:
        if self._limit is None:
            return True
        with self._lock:
            while self._recent and self._recent[0] <= now - RATE_WINDOW_SECONDS:
                self._recent.popleft()
            if len(self._recent) >= self._limit:
                return False
            self._recent.append(now)
            return True
