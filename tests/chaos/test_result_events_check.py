"""The chaos run's result-events verdict, on hand-made tables, logs and applied counts."""

from __future__ import annotations

from typing import Any

from infra.chaos.result_events import judge_result_events, summary_line, wait_for_result_events

ITEMS: dict[str, dict[str, Any]] = {
    "1": {"status": "SOLVED", "submitted_at": 1.0},
    "2": {"status": "FAILED", "submitted_at": 1.0},
    "3": {"status": "SOLVED", "submitted_at": 1.0},  # was EXPIRED first: two results
    "4": {"status": "PENDING", "submitted_at": 1.0},
    "5": {"status": "SOLVED"},  # kept provisionally for an id nobody registered
}


def detail(task_id: str, status: str) -> dict[str, str]:
    return {"task_id": task_id, "status": status}


def test_every_result_published_and_applied_once_passes() -> None:
    published = [
        detail("1", "SOLVED"),
        detail("1", "SOLVED"),  # a duplicate event
        detail("2", "FAILED"),
        detail("3", "EXPIRED"),
        detail("3", "SOLVED"),
    ]
    applied = {("1", "SOLVED"): 1, ("2", "FAILED"): 1, ("3", "EXPIRED"): 1, ("3", "SOLVED"): 1}

    verdict = judge_result_events(ITEMS, published, applied)

    assert verdict.passed
    assert (verdict.final_results, verdict.published_results, verdict.events_published) == (3, 4, 5)
    assert verdict.applied_once == 4
    assert "applied once 4" in summary_line(verdict.to_json())


def test_unpublished_unapplied_and_doubly_applied_results_fail() -> None:
    published = [detail("1", "SOLVED"), detail("3", "SOLVED")]
    applied = {("1", "SOLVED"): 2, ("9", "SOLVED"): 1}

    verdict = judge_result_events(ITEMS, published, applied)

    assert not verdict.passed
    assert verdict.not_published == ["2:FAILED"]
    assert verdict.not_applied == ["2:FAILED", "3:SOLVED"]
    assert verdict.applied_more_than_once == ["1:SOLVED"]
    assert verdict.applied_without_event == ["9:SOLVED"]


def test_a_result_published_for_an_unregistered_id_fails() -> None:
    # Given a (maybe forged) result kept for id 5, which no worker registered, reached the bus
    published = [detail("1", "SOLVED"), detail("2", "FAILED"), detail("3", "SOLVED")]
    published.append(detail("5", "SOLVED"))
    published.append(detail("6", "EXPIRED"))  # a row removed since: not judged
    applied = {("1", "SOLVED"): 1, ("2", "FAILED"): 1, ("3", "SOLVED"): 1, ("5", "SOLVED"): 1}
    applied[("6", "EXPIRED")] = 1

    verdict = judge_result_events(ITEMS, published, applied)

    assert not verdict.passed
    assert verdict.published_unregistered == ["5:SOLVED"]
    assert verdict.final_results == 3


class ConsumerBehind:
    """A stack whose consumer works off `per_look` deliveries every look, on a clock that moves a
    second per look, while a pipe still reading its stream adds `fed_per_look` until it has put
    `still_to_read` more on the bus."""

    def __init__(
        self, backlog: int, per_look: int, fed_per_look: int = 0, still_to_read: int = 0
    ) -> None:
        self.backlog, self.per_look, self.now = backlog, per_look, 0.0
        self.fed_per_look, self.still_to_read = fed_per_look, still_to_read
        self.finished = 0

    def result_events_settled(self) -> bool:
        return self.backlog == 0 and self.still_to_read == 0

    def result_events_finished(self) -> int:
        return self.finished

    def clock(self) -> float:
        return self.now

    def sleep(self, _seconds: float) -> None:
        self.now += 1
        done = min(self.backlog, self.per_look)
        fed = min(self.still_to_read, self.fed_per_look)
        self.backlog += fed - done
        self.still_to_read -= fed
        self.finished += done


def test_a_consumer_minutes_behind_is_waited_for_while_it_makes_progress() -> None:
    stack = ConsumerBehind(backlog=2_800, per_look=7)  # 400 s of work
    wait_for_result_events(stack, clock=stack.clock, sleep=stack.sleep)
    assert stack.backlog == 0 and stack.now >= 400


def test_a_backlog_a_pipe_keeps_level_is_waited_for_while_deliveries_end() -> None:
    # Given a pipe still reading its stream as fast as the consumer works (the backlog stays level)
    stack = ConsumerBehind(backlog=50, per_look=5, fed_per_look=5, still_to_read=2_000)
    # When the run waits for the result events
    wait_for_result_events(stack, clock=stack.clock, sleep=stack.sleep)
    # Then it waited the 400 s of feeding and the 10 s of backlog after it, not the stall limit
    assert (stack.backlog, stack.still_to_read) == (0, 0) and stack.now >= 410


def test_a_consumer_that_makes_no_progress_is_judged_after_the_stall_limit() -> None:
    stack = ConsumerBehind(backlog=10, per_look=0)
    wait_for_result_events(stack, clock=stack.clock, sleep=stack.sleep)
    assert stack.backlog == 10 and 200 <= stack.now <= 202
