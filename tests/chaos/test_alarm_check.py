"""The alarm check's judgement from an alarm history, without a stack."""

from __future__ import annotations

from typing import Any

from infra.chaos.alarm_check import alarm_intervals, expected_alarms, judge_alarms
from infra.chaos.scenario import CI, CLEAN

STARTED = 1000.0


def _report(history: list[tuple[str, str, str, float]], states: dict[str, str]) -> dict[str, Any]:
    logical_ids = {alarm.alarm for alarm in expected_alarms(CI)} | set(states)
    return {
        "alarms": {
            f"stack-{logical_id}": {"logical_id": logical_id, "period": 60, "evaluation_periods": 1}
            for logical_id in logical_ids
        },
        "states": {f"stack-{logical_id}": state for logical_id, state in states.items()},
        "history": [
            {"logical_id": logical_id, "old_state": old, "new_state": new, "at": STARTED + at}
            for logical_id, old, new, at in history
        ],
    }


def _fired_and_cleared(logical_id: str, fired: float, cleared: float) -> list[Any]:
    return [
        (logical_id, "INSUFFICIENT_DATA", "OK", 1.0),
        (logical_id, "OK", "ALARM", fired),
        (logical_id, "ALARM", "OK", cleared),
    ]


def test_every_fault_of_the_ci_run_names_its_alarm() -> None:
    assert {(alarm.fault, alarm.alarm) for alarm in expected_alarms(CI)} == {
        ("gateway down", "PollRecoveredAlarm"),
        ("table down", "ReplayFailedAlarm"),
        ("DLQ down", "CallbackUnavailableAlarm"),
        ("parked message", "ParkingQueueDepthAlarm"),
        ("expired task", "TaskExpiredAlarm"),
        ("poller stopped", "PollerNotRunningAlarm"),
        ("account error", "ProviderAccountErrorAlarm"),
        ("first account down", "ProviderThreadsBusyAlarm"),
        ("result consumer crashing", "ResultConsumerFailedAlarm"),
        ("forward target down", "PingbackForwardFailedAlarm"),
        ("poller failing", "PollerFailedEventsAlarm"),
    }
    assert expected_alarms(CLEAN) == []


def test_a_fault_whose_alarm_fired_in_its_window_and_cleared_passes() -> None:
    history = []
    for alarm in expected_alarms(CI):
        history += _fired_and_cleared(alarm.alarm, alarm.start + 3, alarm.start + 30)
    verdict = judge_alarms(CI, _report(history, {}), STARTED, notifications=14)
    assert verdict.not_raised == []
    assert verdict.passed


def test_an_alarm_that_fired_before_its_fault_or_too_late_does_not_count() -> None:
    history = [
        *_fired_and_cleared("ReplayFailedAlarm", CI.table_down.start - 5, CI.table_down.start - 1),
        *_fired_and_cleared("CallbackUnavailableAlarm", CI.dead_letter_down.end + 100, 500),
    ]
    verdict = judge_alarms(CI, _report(history, {}), STARTED, notifications=0)
    assert "table down: ReplayFailedAlarm" in verdict.not_raised
    assert "DLQ down: CallbackUnavailableAlarm" in verdict.not_raised
    assert not verdict.passed


def test_an_alarm_still_firing_at_the_end_fails_the_run() -> None:
    verdict = judge_alarms(
        CLEAN, _report([], {"TaskExpiredAlarm": "ALARM"}), STARTED, notifications=0
    )
    assert verdict.still_in_alarm == ["TaskExpiredAlarm"]
    assert not verdict.passed


def test_any_alarm_in_a_clean_run_fails_it() -> None:
    history = _fired_and_cleared("TaskExpiredAlarm", 10, 20)
    verdict = judge_alarms(CLEAN, _report(history, {}), STARTED, notifications=2)
    assert verdict.fired_in_clean_run == ["TaskExpiredAlarm"]
    assert not verdict.passed


def test_a_clean_run_is_judged_from_the_moment_the_stack_was_up() -> None:
    """The runner starts a clean run's clock once the first sweep was counted and no alarm is in
    ALARM: the not-running alarm a slow first sweep raised before then is the start's, not the
    run's; the same alarm once the run started fails it."""
    warm_up = [
        ("PollerNotRunningAlarm", "INSUFFICIENT_DATA", "ALARM", -12.0),
        ("PollerNotRunningAlarm", "ALARM", "OK", -3.0),
    ]
    verdict = judge_alarms(CLEAN, _report(warm_up, {}), STARTED, notifications=1)
    assert verdict.fired_in_clean_run == [] and verdict.passed
    during = [*warm_up, ("PollerNotRunningAlarm", "OK", "ALARM", 30.0)]
    verdict = judge_alarms(CLEAN, _report(during, {}), STARTED, notifications=2)
    assert verdict.fired_in_clean_run == ["PollerNotRunningAlarm"]


def test_intervals_pair_each_firing_with_its_clearing() -> None:
    history = [
        {"logical_id": "A", "old_state": "OK", "new_state": "ALARM", "at": STARTED + 5},
        {"logical_id": "A", "old_state": "ALARM", "new_state": "OK", "at": STARTED + 9},
        {"logical_id": "A", "old_state": "OK", "new_state": "ALARM", "at": STARTED + 20},
    ]
    assert alarm_intervals(history, STARTED) == {"A": [[5.0, 9.0], [20.0, None]]}
