"""Parsing the detail of a `Task Result` event (the example consumer's view of docs/events.md)."""

from __future__ import annotations

from typing import Any

import pytest

from result_consumer.event import InvalidResultEvent, ResultEvent


def detail(**overrides: str) -> dict[str, Any]:
    return {
        "detail": {
            "schema_version": "1",
            "task_id": "73112",
            "status": "SOLVED",
            "previous_status": "",
            "delivered_via": "poll",
            "finished_at_earliest": "100.5",
            "finished_at_latest": "104.25",
            "usable_until": "220.5",
            "error": "",
            "owner": "",
            "solution": "03AF-token_x",
            **overrides,
        }
    }


def test_numbers_arrive_as_decimal_strings_and_empty_means_absent() -> None:
    result = ResultEvent.from_event(detail())

    assert (result.finished_at_earliest, result.finished_at_latest) == (100.5, 104.25)
    assert result.usable_until == 220.5
    assert result.previous_status is None and result.owner is None and result.error is None
    assert result.solution == "03AF-token_x"


def test_without_finished_after_the_earliest_is_the_latest() -> None:
    assert ResultEvent.from_event(detail(finished_at_earliest="")).finished_at_earliest == 104.25


def test_without_tokens_published_there_is_no_solution_and_nothing_usable() -> None:
    event = detail()
    del event["detail"]["solution"]

    result = ResultEvent.from_event(event)

    assert result.solution is None
    assert not result.usable_at(150.0)


def test_usable_only_before_usable_until() -> None:
    result = ResultEvent.from_event(detail())
    assert result.usable_at(220.0)
    assert not result.usable_at(220.5)


@pytest.mark.parametrize(
    "bad",
    [
        {"task_id": "12a"},
        {"task_id": ""},
        {"status": "PENDING"},
        {"finished_at_latest": "soon"},
    ],
)
def test_what_is_not_a_result_is_refused(bad: dict[str, str]) -> None:
    with pytest.raises(InvalidResultEvent):
        ResultEvent.from_event(detail(**bad))


def test_an_event_without_detail_is_refused() -> None:
    with pytest.raises(InvalidResultEvent):
        ResultEvent.from_event({"detail-type": "Task Result"})
