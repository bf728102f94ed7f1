"""The token age a waiting worker saw, judged from the provider's truth."""

from __future__ import annotations

from infra.chaos.report import worker_ages_text
from infra.chaos.waiting import token_age_at_worker

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
