"""The token age a waiting worker saw, judged from the provider's truth."""

from __future__ import annotations

from infra.chaos.report import pushed_ages_text, worker_ages_text
from infra.chaos.waiting import token_age_at_pushed_worker, token_age_at_worker
from infra.local.pipes.stream_pipe import PublishedWrite

TRUTH = [
    {"id": 1, "outcome": "solved", "finished_at": 100.0},
    {"id": 2, "outcome": "solved", "finished_at": 100.0},
    {"id": 3, "outcome": "solved", "finished_at": 100.0},
    {"id": 4, "outcome": "failed", "finished_at": 100.0},
    {"id": 5, "outcome": "solved", "finished_at": 100.0},  # nobody waited for it
]


def test_ages_count_from_the_provider_finishing_and_late_or_missing_tokens_are_unusable() -> None:
    # Given workers had task 1 after 4 s, task 2 after 130 s, never had 3, and 4 was unsolvable
    had_at = {"1": 104.0, "2": 230.0, "3": None, "4": None}

    ages = token_age_at_worker(TRUTH, had_at)

    assert ages["waited_solved"] == 3
    assert ages["age_seconds"]["count"] == 2 and ages["age_seconds"]["max"] == 130.0
    assert ages["unusable"] == 2
    assert "over 3 solved tasks; unusable 2" in worker_ages_text(ages)


def test_no_waited_task_says_so() -> None:
    assert worker_ages_text(token_age_at_worker(TRUTH, {})) == "no task waited for"


def test_pushed_workers_ages_say_how_many_tokens_came_pushed_and_how_many_by_a_fallback_get() -> (
    None
):
    # Given pushed workers had 1 (pushed) after 1 s, 2 (a fallback GET found it) after 9 s,
    # never had 3, and 4 was unsolvable; 1's result was written 0.25 s before it was in hand
    # and its event was on the bus 0.1 s after the write
    had_at = {"1": 101.0, "2": 109.0, "3": None, "4": None}
    writes = {"1": PublishedWrite(100.75, 100.85), "2": PublishedWrite(100.5, 100.5)}

    ages = token_age_at_pushed_worker(TRUTH, had_at, by_get={"2"}, writes=writes)

    assert ages["age_seconds"]["count"] == 2 and ages["age_seconds"]["max"] == 9.0
    assert (ages["by_push"], ages["by_get_fallback"], ages["unusable"]) == (1, 1, 1)
    # only pushed tokens count from the write: the fallback GET's is not a push
    assert ages["pushed_after_written_seconds"] == {
        "count": 1,
        "p50": 0.25,
        "p95": 0.25,
        "max": 0.25,
    }
    assert ages["pipe_delay_seconds"]["p95"] == 0.1
    assert pushed_ages_text(ages).endswith(
        "unusable 1; by push 1, by GET fallback 1;"
        " pushed after the result's write to the table p50 0.25 s, p95 0.25 s"
        " (of which the local pipe, write to bus: p50 0.1 s, p95 0.1 s)"
    )


def test_no_pushed_worker_says_so() -> None:
    assert pushed_ages_text(None) == "no task waited for"
