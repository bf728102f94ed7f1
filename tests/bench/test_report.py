"""The report: headline table, sections, and how failures show."""

from __future__ import annotations

from bench.outcome import (
    FAILED,
    Headline,
    SectionOutcome,
    markdown_table,
    number,
    one_line,
)
from bench.report import RunInfo, headline_rows, markdown_report, results_document

RUN = RunInfo("2026-01-01 00:00", 61.0, "abc1234", "3.12.1", "x86_64, 2 CPUs", (0.5, 1.5))


def outcomes() -> list[SectionOutcome]:
    return [
        SectionOutcome(
            key="one",
            title="1. Measured",
            headlines=[Headline("writes / task", "1", "1", True)],
            details=["detail line"],
        ),
        SectionOutcome(key="two", title="2. Broken", status=FAILED, note="ValueError: boom"),
        SectionOutcome(
            key="three",
            title="3. Skipped",
            status=FAILED,
            note="no local stack",
            headlines=[Headline("ratio", "pending")],
        ),
    ]


def test_cells_with_pipes_are_escaped() -> None:
    assert markdown_table(["a"], [["x|y"]]) == ["| a |", "| --- |", "| x\\|y |"]


def test_numbers_keep_counts_whole_and_ratios_at_two_decimals() -> None:
    assert (number(1.0), number(0.4), number(201), number(2.345, 1)) == ("1", "0.40", "201", "2.3")


def test_headline_rows_show_verdicts_failures_and_skips() -> None:
    assert headline_rows(outcomes()) == [
        ["1", "writes / task", "1", "1", "met"],
        ["2", "2. Broken", "failed: ValueError: boom", "", ""],
        ["3", "ratio", "failed", "", ""],
    ]


def test_the_report_has_every_section_and_says_why_one_is_missing() -> None:
    report = markdown_report(RUN, outcomes())
    for expected in ("## 1. Measured", "detail line", "## 2. Broken", "ValueError: boom"):
        assert expected in report
    assert "**failed**: no local stack" in report


def test_results_json_keys_sections_by_name() -> None:
    document = results_document(RUN, outcomes())
    assert set(document["sections"]) == {"one", "two", "three"}
    assert document["sections"]["one"]["headlines"][0]["met"] is True
    assert document["run"]["commit"] == "abc1234"


def test_errors_become_one_short_line() -> None:
    text = one_line(RuntimeError("a\nb   c" + "x" * 500), limit=40)
    assert text.startswith("RuntimeError: a b c") and len(text) == 40 and "\n" not in text
