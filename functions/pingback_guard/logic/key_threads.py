"""A worker key's capacity in threads, as CaptchaAI sells a plan: at most ``threads`` of the key's
tasks in flight at once (``keys issue --threads N``), and what res.php ``threadsinfo`` answers for
the key: ``{"threads": N, "working_threads": M}`` (captchaai 1.0.1, core/orchestrator.py
get_thread_usage / read_thread_counts).

A task holds its thread from its submit until its key reads it final from res.php, or until
LEASE_SECONDS have passed (a client that never comes back frees it so). A key told "busy" (its
request rate, or all its threads) shows full in threadsinfo for RATE_BUSY_SECONDS: CaptchaAI's SDK
asks threadsinfo right after a busy submit answer, and retries only when the plan reads full.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from pingback_guard.data.key_threads import KeyThreadStore
from pingback_guard.logic.worker_keys import KeyHolder

# CaptchaAI's SDK polls a task for at most 180 s after its first wait of up to 15 s
# (core/config.py max_poll_seconds, core/registry.py initial_wait): past that nobody reads it.
LEASE_SECONDS = 195.0
# The SDK waits about 8 s (plus up to 3 s of jitter) between busy retries
# (helpers/retry.py thread_busy_backoff).
RATE_BUSY_SECONDS = 11.0
SUBMIT_SLOT_PREFIX = "submit-"


@dataclass(frozen=True)
class ThreadsInfo:
    threads: int
    working_threads: int


class KeyThreads:
    def __init__(self, store: KeyThreadStore, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    def reserve(self, holder: KeyHolder) -> str | None:
        """A thread for one submit (its token), None when the key's threads are all in flight.
        A StoreError is the caller's to answer."""
        token = f"{SUBMIT_SLOT_PREFIX}{secrets.token_hex(8)}"
        now = self._clock()
        if self._store.take(holder.key_id, token, now + LEASE_SECONDS, now, holder.threads):
            return token
        return None

    def settle(self, holder: KeyHolder, token: str, task_id: str) -> None:
        """The submit's thread is now its task's, held until the task is read final."""
        self._store.rename(holder.key_id, token, task_id, self._clock() + LEASE_SECONDS)

    def abandon(self, holder: KeyHolder, token: str) -> None:
        """The submit made no task: its thread is free again."""
        self._store.release(holder.key_id, token)

    def finished(self, holder: KeyHolder, task_id: str) -> None:
        """The key read its task final: the task's thread is free again."""
        self._store.release(holder.key_id, task_id)

    def refused_busy(self, holder: KeyHolder) -> None:
        """The key was told "busy" (its rate, or a thread freed only after the refusal):
        threadsinfo shows it full for RATE_BUSY_SECONDS."""
        self._store.mark_busy(holder.key_id, self._clock() + RATE_BUSY_SECONDS)

    def info(self, holder: KeyHolder) -> ThreadsInfo:
        """The key's threads and its tasks in flight; all of them while it is refused for its
        request rate."""
        now = self._clock()
        held = self._store.read(holder.key_id)
        working = len(held.live(now))
        if held.busy_until > now:
            working = max(working, holder.threads)
        return ThreadsInfo(holder.threads, working)
