"""The rules of a wait() both clients share; each client does its own looking and sleeping.

GET /tasks/{id} is the source of truth. A PENDING answer says when looking again is worthwhile
(`retry_after`: when the stack itself checks res.php next); the client follows it. With push
connected (pingback_guard_client.push), the final result usually arrives pushed and a GET is only
the safety net for a lost push.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pingback_guard_client.errors import ServiceUnavailable, TokenUnusable, Unsolvable, WaitTimeout
from pingback_guard_client.models import SOLVED, Solution, TaskView


@dataclass(frozen=True)
class Pacing:
    """How often wait() asks GET /tasks/{id}.

    ``interval``: between GETs when the stack gives no hint (an older stack, an outage), or
    always when ``follow_hints`` is False (the old once-a-second loop). ``max_interval``: the
    longest pause a hint may ask for without push. ``push_check_interval``: with push connected,
    a GET this long after the last look, in case a push was lost.
    """

    interval: float = 1.0
    follow_hints: bool = True
    max_interval: float = 30.0
    push_check_interval: float = 60.0

    def __post_init__(self) -> None:
        if not 0 < self.interval <= self.max_interval <= self.push_check_interval:
            raise ValueError("need 0 < interval <= max_interval <= push_check_interval")


class Waiting:
    """One wait() for a task, sync or async alike: what each look at the task means, and how
    long to pause before the next, against a deadline on ``clock``; ``now`` dates a token."""

    def __init__(
        self,
        task_id: str,
        timeout: float,
        pacing: Pacing,
        clock: Callable[[], float],
        *,
        now: Callable[[], float],
        first_look_after: float | None = None,
    ) -> None:
        self._task_id = task_id
        self._timeout = timeout
        self._pacing = pacing
        self._clock = clock
        self._now = now
        self._deadline = clock() + timeout
        self._looked_at = clock()
        # When the next GET is due without push: at once, or when the submit's hint says (a
        # worker that ignores hints looks at once: asking more never gets an older answer).
        hinted = first_look_after if pacing.follow_hints else None
        self._next_at = self._looked_at + (hinted or 0.0)

    def look(self, task: Callable[[str], TaskView]) -> Solution | None:
        """The solution once the task is final, None while it is not; an outage of the stack
        is waited out until the deadline (then ServiceUnavailable)."""
        try:
            return self.accept(task(self._task_id))
        except ServiceUnavailable:
            if self._clock() >= self._deadline:
                raise
            self._next_at = self._clock() + self._pacing.interval
            return None

    def accept(self, view: TaskView) -> Solution | None:
        """A view read or pushed: the solution when final; a PENDING one's hint is followed."""
        self._looked_at = self._clock()
        pacing = self._pacing
        wanted = pacing.interval
        if pacing.follow_hints and view.retry_after is not None:
            wanted = min(pacing.max_interval, view.retry_after)
        self._next_at = self._looked_at + wanted
        return settled(view, self._now())

    def pause(self, push_connected: bool = False) -> float:
        """Seconds until the next GET; WaitTimeout once the deadline has passed."""
        now = self._clock()
        remaining = self._deadline - now
        if remaining <= 0:
            raise WaitTimeout(self._task_id, self._timeout)
        due = self._next_at
        if push_connected:
            due = max(due, self._looked_at + self._pacing.push_check_interval)
        return max(0.0, min(due - now, remaining))


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
