"""The rules of a wait() both clients share; each client does its own polling and sleeping."""

from __future__ import annotations

from collections.abc import Callable

from pingback_guard_client.errors import ServiceUnavailable, TokenUnusable, Unsolvable, WaitTimeout
from pingback_guard_client.models import SOLVED, Solution, TaskView


class Waiting:
    """One wait() for a task, sync or async alike: what each look at the task means, and how
    long to pause before the next, against a deadline on ``clock``; ``now`` dates a token."""

    def __init__(
        self,
        task_id: str,
        timeout: float,
        poll_interval: float,
        clock: Callable[[], float],
        *,
        now: Callable[[], float],
    ) -> None:
        self._task_id = task_id
        self._timeout = timeout
        self._poll_interval = poll_interval
        self._clock = clock
        self._now = now
        self._deadline = clock() + timeout

    def look(self, task: Callable[[str], TaskView]) -> Solution | None:
        """The solution once the task is final, None while it is not; an outage of the stack
        is waited out until the deadline (then ServiceUnavailable)."""
        try:
            return settled(task(self._task_id), self._now())
        except ServiceUnavailable:
            if self._clock() >= self._deadline:
                raise
            return None

    def pause(self) -> float:
        """Seconds until the next look; WaitTimeout once the deadline has passed."""
        remaining = self._deadline - self._clock()
        if remaining <= 0:
            raise WaitTimeout(self._task_id, self._timeout)
        return min(self._poll_interval, remaining)


def settled(view: TaskView, now: float) -> Solution | None:
    """A final task's solution, None while PENDING; raises for a task without a usable token."""
    if not view.is_final:
        return None
    if view.status != SOLVED or view.solution is None:
        raise Unsolvable(view.task_id, view.status, view.error)
    solution = Solution.from_view(view)
    if view.usable is False or not solution.usable_at(now):
        raise TokenUnusable(view.task_id, view.usable_until)
    return solution
