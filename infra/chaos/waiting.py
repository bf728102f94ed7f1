"""Workers that wait for their token with the worker client, and how old the token was when they
had it: the figure a worker cares about (a reCAPTCHA token lives 120 s). One task in `every` is
waited for, by a worker of its own, like a fleet of workers each solving one CAPTCHA."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from infra.chaos.checker import percentiles
from infra.client_worker import ClientWaiter
from infra.project_template import parameter_default, project_template

# reCAPTCHA v2/v3 (the chaos workload's kind), as the deployed stack counts it.
TOKEN_LIFETIME_SECONDS = float(
    parameter_default(project_template(), "RecaptchaTokenLifetimeSeconds")
)
# A worker gives up after the token's lifetime past a slow solve: what comes later is useless.
PATIENCE_SECONDS = 60.0 + TOKEN_LIFETIME_SECONDS


class WaitingWorkers:
    def __init__(self, api_url: str, region: str, every: int) -> None:
        self._api_url = api_url
        self._region = region
        self._every = max(1, every)
        self._lock = threading.Lock()
        self._accepted = 0
        self._threads: list[threading.Thread] = []
        self.had_at: dict[str, float | None] = {}

    def accepted(self, task_id: str) -> None:
        """A submit returned this task id: every `every`-th one gets a waiting worker."""
        with self._lock:
            self._accepted += 1
            if self._accepted % self._every:
                return
            thread = threading.Thread(
                target=self._wait, args=(task_id,), name=f"waiter-{task_id}", daemon=True
            )
            self._threads.append(thread)
        thread.start()

    def join(self, timeout: float) -> None:
        """Until every waiter has ended, or `timeout` has passed for all of them together."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))

    def _wait(self, task_id: str) -> None:
        worker = ClientWaiter(self._api_url, self._region)
        try:
            had_at = worker.had_token_at(task_id, PATIENCE_SECONDS)
        finally:
            worker.close()
        with self._lock:
            self.had_at[task_id] = had_at


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
