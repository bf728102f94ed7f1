"""Workers that wait for their token with the worker client, and how old the token was when they
had it: the figure a worker cares about (a reCAPTCHA token lives 120 s). One task in `every` is
waited for by GET, by a worker of its own, like a fleet of workers each solving one CAPTCHA; with
the stack's WebSocket URL, another task in `every` is waited for with push, all of them over one
connection (one worker process waiting for many tasks), paced GETs only while push is down."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from infra.chaos.checker import percentiles
from infra.client_worker import ClientWaiter, WaitMode
from infra.local.pipes.stream_pipe import PublishedWrite
from infra.project_template import parameter_default, project_template

# reCAPTCHA v2/v3 (the chaos workload's kind), as the deployed stack counts it.
TOKEN_LIFETIME_SECONDS = float(
    parameter_default(project_template(), "RecaptchaTokenLifetimeSeconds")
)
# A worker gives up after the token's lifetime past a slow solve: what comes later is useless.
PATIENCE_SECONDS = 60.0 + TOKEN_LIFETIME_SECONDS


class WaitingWorkers:
    def __init__(self, api_url: str, region: str, every: int, push_url: str | None = None) -> None:
        self._api_url = api_url
        self._region = region
        self._every = max(1, every)
        self._lock = threading.Lock()
        self._accepted = 0
        self._threads: list[threading.Thread] = []
        self.had_at: dict[str, float | None] = {}
        self._pushed = ClientWaiter(api_url, region, WaitMode.PUSH, push_url) if push_url else None
        self.pushed_had_at: dict[str, float | None] = {}
        self.pushed_by_get: set[str] = set()
        """Of the pushed workers' tasks, those a fallback GET found final."""

    def accepted(self, task_id: str) -> None:
        """A submit returned this task id: every `every`-th one gets a waiting worker by GET,
        and (with push, `every` > 1) the one half-way between them a pushed one."""
        with self._lock:
            self._accepted += 1
            slot = self._accepted % self._every
            name = f"waiter-{task_id}"
            if slot == 0:
                thread = threading.Thread(target=self._wait, args=(task_id,), name=name)
            elif self._pushed is not None and slot == self._every // 2:
                thread = threading.Thread(
                    target=self._wait_pushed, args=(self._pushed, task_id), name=name
                )
            else:
                return
            thread.daemon = True
            self._threads.append(thread)
        thread.start()

    def join(self, timeout: float) -> None:
        """Until every waiter has ended, or `timeout` has passed for all of them together; then
        the pushed workers' connection is closed."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._pushed is not None:
            self._pushed.close()

    def _wait(self, task_id: str) -> None:
        worker = ClientWaiter(self._api_url, self._region)
        try:
            had_at = worker.had_token_at(task_id, PATIENCE_SECONDS)
        finally:
            worker.close()
        with self._lock:
            self.had_at[task_id] = had_at

    def _wait_pushed(self, waiter: ClientWaiter, task_id: str) -> None:
        had_at = waiter.had_token_at(task_id, PATIENCE_SECONDS)
        by_get = waiter.found_final_by_get(task_id)
        with self._lock:
            self.pushed_had_at[task_id] = had_at
            if by_get:
                self.pushed_by_get.add(task_id)


def token_age_at_pushed_worker(
    truth: Sequence[Mapping[str, Any]],
    had_at: Mapping[str, float | None],
    by_get: Collection[str],
    writes: Mapping[str, PublishedWrite],
) -> dict[str, Any]:
    """token_age_at_worker for the pushed workers, how their tokens came (pushed, or found by a
    fallback GET: push down or late), and for each pushed one how long after its result was
    written to the table it was in hand, and how much of that the pipe took to put its event
    on the bus (`writes`: the stack's first published write per task id)."""
    ages = token_age_at_worker(truth, had_at)
    solved = {str(task["id"]) for task in truth if task.get("outcome") == "solved"}
    in_hand = [task_id for task_id, moment in had_at.items() if moment is not None]
    in_hand_solved = [task_id for task_id in in_hand if task_id in solved]
    fallback = sum(1 for task_id in in_hand_solved if task_id in by_get)
    pushed = [
        (float(moment), writes[task_id])
        for task_id, moment in had_at.items()
        if moment is not None and task_id not in by_get and task_id in writes
    ]
    return {
        **ages,
        "by_push": len(in_hand_solved) - fallback,
        "by_get_fallback": fallback,
        "pushed_after_written_seconds": percentiles(
            [max(0.0, moment - write.written_at) for moment, write in pushed]
        ),
        "pipe_delay_seconds": percentiles(
            [max(0.0, write.published_at - write.written_at) for _, write in pushed]
        ),
    }


def token_age_at_worker(
    truth: Sequence[Mapping[str, Any]], had_at: Mapping[str, float | None]
) -> dict[str, Any]:
    """Over the waited tasks the provider solved: the token's age when the worker had it, from
    the provider's own finishing time, and how many were unusable (too old, or never in hand)."""
    finished = {
        str(task["id"]): float(task["finished_at"])
        for task in truth
        if task.get("outcome") == "solved" and task.get("finished_at") is not None
    }
    ages = {
        task_id: None if moment is None else moment - finished[task_id]
        for task_id, moment in had_at.items()
        if task_id in finished
    }
    in_hand = [age for age in ages.values() if age is not None]
    return {
        "waited_solved": len(ages),
        "age_seconds": percentiles(in_hand),
        "unusable": len(ages) - sum(1 for age in in_hand if age <= TOKEN_LIFETIME_SECONDS),
    }
