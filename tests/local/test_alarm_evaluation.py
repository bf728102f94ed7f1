"""The local alarm evaluator against the CloudWatch semantics it claims: statistics, M out of N,
TreatMissingData (AWS's documented table), metric math, the time scale, and its metric sources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.local.cloudformation.intrinsics import Resolver
from infra.local.cloudwatch.alarm_runtime import (
    EmfTail,
    SqsAges,
    emf_datapoints,
    filter_matches,
    parse_json_filter,
)
from infra.local.cloudwatch.alarms import (
    ALARM,
    INSUFFICIENT_DATA,
    OK,
    AlarmBoard,
    AlarmDefinition,
    MetricKey,
    MetricStore,
    UnsupportedAlarm,
    Window,
    alarm_definition,
    datapoints,
    decide,
    evaluation_window,
    statistic,
)
from infra.project_template import project_template
from pingback_guard.domain.lease import PollerStart
from pingback_guard.observability import count_scheduled_run

ERRORS = MetricKey.of("AWS/Lambda", "Errors", FunctionName="f")


def _alarm(**overrides: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "Namespace": "AWS/Lambda",
        "MetricName": "Errors",
        "Dimensions": [{"Name": "FunctionName", "Value": "f"}],
        "Statistic": "Sum",
        "Period": 60,
        "EvaluationPeriods": 5,
        "DatapointsToAlarm": 3,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "AlarmActions": ["arn:topic"],
        "OKActions": ["arn:topic"],
    }
    properties.update(overrides)
    return properties


def _row(pattern: str) -> tuple[dict[int, float], Window]:
    """AWS's notation: 0 = not breaching, X = breaching, - = missing."""
    values = {index: {"0": 0.0, "X": 5.0}[c] for index, c in enumerate(pattern) if c != "-"}
    return values, Window(0.0, 60.0, 0, len(pattern))


# "Configuring how CloudWatch alarms treat missing data": 3 datapoints to alarm out of 5.
AWS_TABLE = [
    ("0-X-X", {"missing": OK, "ignore": OK, "breaching": ALARM, "notBreaching": OK}),
    ("-----", {"missing": INSUFFICIENT_DATA, "ignore": "keep", "breaching": ALARM,
               "notBreaching": OK}),
    ("0XX-X", {"missing": ALARM, "ignore": ALARM, "breaching": ALARM, "notBreaching": ALARM}),
    ("0XX--", {"missing": OK, "ignore": OK, "breaching": ALARM, "notBreaching": OK}),
    ("--X--", {"missing": ALARM, "ignore": ALARM, "breaching": ALARM, "notBreaching": OK}),
]  # fmt: skip


def summed_inputs(metric_by_id: dict[str, str]) -> list[dict[str, Any]]:
    """Metric-math inputs, not returned themselves: each id the per-minute Sum of metric N/name."""
    return [
        {
            "Id": query_id,
            "ReturnData": False,
            "MetricStat": {
                "Metric": {"Namespace": "N", "MetricName": name},
                "Period": 60,
                "Stat": "Sum",
            },
        }
        for query_id, name in metric_by_id.items()
    ]


def stored_in_n(*datapoints: tuple[str, float, float]) -> MetricStore:
    """A store holding (name, time, value) datapoints of metric N/name, as summed_inputs reads."""
    store = MetricStore()
    for name, at, value in datapoints:
        store.put(MetricKey.of("N", name), at, value)
    return store


@pytest.mark.parametrize(("pattern", "expected"), AWS_TABLE)
@pytest.mark.parametrize("treat", ["missing", "ignore", "breaching", "notBreaching"])
def test_treat_missing_data_follows_the_documented_table(
    pattern: str, expected: dict[str, str], treat: str
) -> None:
    definition = alarm_definition("a", "A", _alarm(TreatMissingData=treat))
    values, window = _row(pattern)
    for current in (OK, ALARM):
        want = current if expected[treat] == "keep" else expected[treat]
        assert decide(definition, values, window, current).state == want


@pytest.mark.parametrize(
    ("pattern", "state"), [("XX0", ALARM), ("X0X", ALARM), ("X00", OK), ("0X0", OK)]
)
def test_two_datapoints_out_of_three(pattern: str, state: str) -> None:
    definition = alarm_definition(
        "a", "A", _alarm(EvaluationPeriods=3, DatapointsToAlarm=2, TreatMissingData="notBreaching")
    )
    values, window = _row(pattern)
    assert decide(definition, values, window, OK).state == state


def test_datapoints_to_alarm_defaults_to_evaluation_periods() -> None:
    properties = _alarm(EvaluationPeriods=3)
    del properties["DatapointsToAlarm"]
    definition = alarm_definition("a", "A", properties)
    assert definition.datapoints_to_alarm == 3
    assert decide(definition, *_row("XX0"), OK).state == OK


@pytest.mark.parametrize(
    ("comparison", "value", "breaches"),
    [
        ("GreaterThanOrEqualToThreshold", 1, True),
        ("GreaterThanThreshold", 1, False),
        ("LessThanThreshold", 0, True),
        ("LessThanOrEqualToThreshold", 2, False),
    ],
)
def test_comparison_operators(comparison: str, value: float, breaches: bool) -> None:
    assert alarm_definition("a", "A", _alarm(ComparisonOperator=comparison)).breaches(value) is (
        breaches
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Sum", 10.0),
        ("Average", 2.5),
        ("Minimum", 1.0),
        ("Maximum", 4.0),
        ("SampleCount", 4.0),
        ("p50", 2.0),
        ("p99", 4.0),
    ],
)
def test_statistics(name: str, value: float) -> None:
    assert statistic([3.0, 1.0, 4.0, 2.0], name) == value


def test_extended_statistic_alarm_uses_the_percentile() -> None:
    properties = _alarm(ExtendedStatistic="p90", EvaluationPeriods=1, DatapointsToAlarm=1)
    del properties["Statistic"]
    definition = alarm_definition("a", "A", properties)
    store = MetricStore()
    for value in range(1, 11):
        store.put(ERRORS, 1.0, float(value))
    window = Window(0.0, 60.0, 0, 1)
    assert datapoints(definition, store, window) == {0: 9.0}


def test_no_window_until_every_bucket_lies_after_the_start() -> None:
    definition = alarm_definition("a", "A", _alarm(EvaluationPeriods=3))
    # Period 60 at time scale 12: buckets of 5 s from the origin 100.
    assert evaluation_window(definition, 100.0, 114.9, 12) is None
    window = evaluation_window(definition, 100.0, 116.0, 12)
    assert window == Window(100.0, 5.0, 0, 3)
    assert window.bounds(2) == (110.0, 115.0)


def test_board_fires_and_clears_on_the_local_time_scale_with_one_history_entry_each() -> None:
    store = MetricStore()
    definition = alarm_definition(
        "errors",
        "ErrorsAlarm",
        _alarm(EvaluationPeriods=1, DatapointsToAlarm=1, TreatMissingData="notBreaching"),
    )
    board = AlarmBoard([definition], store, time_scale=60, origin=0.0)
    store.put(ERRORS, 0.5, 1.0)  # bucket 0 is [0, 1) at time scale 60
    assert board.states["errors"] == INSUFFICIENT_DATA
    assert [change.new_state for change in board.evaluate(1.2)] == [ALARM]
    assert board.evaluate(1.5) == []
    assert [change.new_state for change in board.evaluate(2.1)] == [OK]
    assert [(c.old_state, c.new_state) for c in board.history] == [
        (INSUFFICIENT_DATA, ALARM),
        (ALARM, OK),
    ]


def test_a_late_evaluation_still_sees_every_period_in_order() -> None:
    store = MetricStore()
    definition = alarm_definition(
        "errors",
        "ErrorsAlarm",
        _alarm(EvaluationPeriods=1, DatapointsToAlarm=1, TreatMissingData="notBreaching"),
    )
    board = AlarmBoard([definition], store, time_scale=60, origin=0.0, lag_seconds=0.5)
    store.put(ERRORS, 1.5, 1.0)  # only bucket [1, 2) breaches
    # Given nothing evaluated for 4 periods, when evaluation runs at last,
    changes = board.evaluate(4.6)
    # then the breaching period fired and the next one cleared, stamped when they ended.
    assert [(c.new_state, c.at) for c in changes] == [(OK, 1.0), (ALARM, 2.0), (OK, 3.0)]
    # And the period that ended less than lag_seconds ago waits for its late datapoints.
    store.put(ERRORS, 4.2, 1.0)
    assert [(c.new_state, c.at) for c in board.evaluate(5.6)] == [(ALARM, 5.0)]


def test_missing_data_breaching_fires_when_a_scheduled_function_stops() -> None:
    invocations = MetricKey.of("AWS/Lambda", "Invocations", FunctionName="poller")
    definition = alarm_definition(
        "poller-not-running",
        "PollerNotRunningAlarm",
        _alarm(
            MetricName="Invocations",
            Dimensions=[{"Name": "FunctionName", "Value": "poller"}],
            Period=120,
            EvaluationPeriods=1,
            DatapointsToAlarm=1,
            Threshold=1,
            ComparisonOperator="LessThanThreshold",
            TreatMissingData="breaching",
        ),
    )
    store = MetricStore()
    board = AlarmBoard([definition], store, time_scale=60, origin=0.0)
    store.put(invocations, 1.0, 1.0)
    board.evaluate(2.0)
    assert board.states["poller-not-running"] == OK
    board.evaluate(4.0)  # no invocation in [2, 4)
    assert board.states["poller-not-running"] == ALARM


POLLER = "pingback-guard-PollerFunction-1A2B3C4D5E6F"


class _PlaceholderResources:
    """The stack's resources by placeholder physical ids: enough to resolve an alarm's Refs."""

    def physical_id(self, logical_id: str) -> str:
        return POLLER if logical_id == "PollerFunction" else f"placeholder-{logical_id}"

    def attribute(self, logical_id: str, attribute: str) -> Any:
        return f"placeholder-{logical_id}-{attribute}"

    def __contains__(self, logical_id: object) -> bool:
        return logical_id in project_template()["Resources"]


def _template_alarm(logical_id: str) -> AlarmDefinition:
    """template.yaml's alarm as the local runtime resolves it, with the parameters' defaults."""
    template = project_template()
    defaults = {
        name: spec["Default"] for name, spec in template["Parameters"].items() if "Default" in spec
    }
    resolver = Resolver(
        {**defaults, "AWS::StackName": "alarms", "AWS::Region": "us-east-1"},
        _PlaceholderResources(),
        mappings=template["Mappings"],
    )
    properties = resolver.resolve(template["Resources"][logical_id]["Properties"])
    return alarm_definition(f"alarms-{logical_id}", logical_id, properties)


def _emitted_run(start: PollerStart, capsys: pytest.CaptureFixture[str]) -> tuple[MetricKey, float]:
    """What the poller handler's metric line says once an invocation with this start returned."""
    capsys.readouterr()
    count_scheduled_run(start, POLLER)
    ((key, _at, value),) = [
        point for line in capsys.readouterr().out.splitlines() for point in emf_datapoints(line)
    ]
    return key, value


def test_woken_runs_without_scheduled_ones_raise_poller_not_running(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the template's alarm, and what the poller of stack "alarms" emits as a woken and a
    # scheduled run return (the template gives each stack its namespace)
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "PingbackGuard/alarms")
    alarm = _template_alarm("PollerNotRunningAlarm")
    woken, scheduled = (
        _emitted_run(PollerStart.WOKEN, capsys),
        _emitted_run(PollerStart.SCHEDULED, capsys),
    )
    assert woken[0] == scheduled[0] == alarm.returned.metric
    store = MetricStore()
    board = AlarmBoard([alarm], store, time_scale=alarm.period, origin=0.0)  # 1 s a period
    # When both run for two periods, the alarm is OK
    for at in (0.2, 0.7, 1.2, 1.7):
        for key, value in (woken, scheduled):
            store.put(key, at, value)
    board.evaluate(2.0)
    assert board.states[alarm.name] == OK
    # When the schedule stops while submits keep waking the poller twice a period
    for at in (2.2, 2.7, 3.2, 3.7):
        store.put(woken[0], at, woken[1])
    board.evaluate(3.0)
    assert board.states[alarm.name] == OK  # one period without a scheduled run is not an alarm
    # Then the alarm fires after two periods with woken runs only
    board.evaluate(4.0)
    assert board.states[alarm.name] == ALARM


def test_metric_math_fills_missing_series_and_adds_them() -> None:
    properties = {
        "Metrics": [
            {"Id": "total", "Expression": "FILL(a, 0) + FILL(b, 0)", "ReturnData": True},
            *summed_inputs({"a": "A", "b": "B"}),
        ],
        "EvaluationPeriods": 2,
        "DatapointsToAlarm": 1,
        "Threshold": 3,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    }
    definition = alarm_definition("m", "M", properties)
    store = stored_in_n(("A", 10.0, 1.0), ("B", 20.0, 2.0), ("B", 70.0, 1.0))
    window = Window(0.0, 60.0, 0, 2)
    values = datapoints(definition, store, window)
    assert values == {0: 3.0, 1: 1.0}
    assert decide(definition, values, window, OK).state == ALARM


def test_metric_math_without_fill_is_missing_where_an_operand_is() -> None:
    properties = {
        "Metrics": [
            {"Id": "rate", "Expression": "rejected / total * 100"},
            *summed_inputs({"rejected": "rejected", "total": "total"}),
        ],
        "EvaluationPeriods": 2,
        "Threshold": 50,
        "ComparisonOperator": "GreaterThanThreshold",
    }
    definition = alarm_definition("r", "R", properties)
    store = stored_in_n(("total", 10.0, 4.0), ("rejected", 10.0, 3.0), ("total", 70.0, 4.0))
    assert datapoints(definition, store, Window(0.0, 60.0, 0, 2)) == {0: 75.0}


def undelivered_alarm(expression: str) -> dict[str, Any]:
    """Results stored (metric N/stored) while nothing was published (N/published): 1, else 0."""
    return {
        "Metrics": [
            {"Id": "undelivered", "Expression": expression},
            *summed_inputs({"stored": "stored", "published": "published"}),
        ],
        "EvaluationPeriods": 4,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "breaching",
    }


@pytest.mark.parametrize(
    "expression",
    [
        "IF(FILL(stored, 0) > 0 AND FILL(published, 0) <= 0, 1, 0)",
        "IF(FILL(stored, 0) > 0 && FILL(published, 0) == 0, 1, 0)",
    ],
)
def test_metric_math_if_with_comparisons_and_and(expression: str) -> None:
    definition = alarm_definition("u", "U", undelivered_alarm(expression))
    # Buckets: stored and published / stored, nothing published / quiet / published only.
    store = stored_in_n(
        ("stored", 10.0, 2.0), ("published", 20.0, 2.0), ("stored", 70.0, 1.0),
        ("published", 190.0, 1.0),
    )  # fmt: skip
    assert datapoints(definition, store, Window(0.0, 60.0, 0, 4)) == {
        0: 0.0,
        1: 1.0,
        2: 0.0,
        3: 0.0,
    }


def test_metric_math_logic_is_missing_where_an_operand_is_and_if_may_drop_a_bucket() -> None:
    window = Window(0.0, 60.0, 0, 3)
    store = stored_in_n(("stored", 10.0, 2.0), ("published", 10.0, 1.0), ("stored", 70.0, 1.0))
    both = alarm_definition("b", "B", undelivered_alarm("stored > 0 OR published > 0"))
    assert datapoints(both, store, window) == {0: 1.0}
    # IF without a false value has no datapoint where its condition is false.
    only_true = alarm_definition("t", "T", undelivered_alarm("IF(FILL(published, 0) == 0, 5)"))
    assert datapoints(only_true, store, window) == {1: 5.0, 2: 5.0}


def test_unsupported_alarms_are_refused_not_guessed() -> None:
    with pytest.raises(UnsupportedAlarm):
        alarm_definition("a", "A", _alarm(ComparisonOperator="LessThanLowerThreshold"))
    with pytest.raises(UnsupportedAlarm):
        statistic([1.0], "TM(10%:90%)")


def test_emf_lines_become_datapoints_with_their_timestamp_and_dimensions(tmp_path: Path) -> None:
    document = {
        "_aws": {
            "Timestamp": 1_700_000_000_500,
            "CloudWatchMetrics": [
                {
                    "Namespace": "PingbackGuard",
                    "Dimensions": [["service"]],
                    "Metrics": [{"Name": "TaskExpired", "Unit": "Count"}],
                }
            ],
        },
        "service": "pingback-guard",
        "TaskExpired": [1.0, 1.0],
    }
    line = json.dumps(document)
    key = MetricKey.of("PingbackGuard", "TaskExpired", service="pingback-guard")
    assert emf_datapoints(line) == [(key, 1_700_000_000.5, 1.0)] * 2
    assert emf_datapoints("START RequestId: x") == []
    log = tmp_path / "PollerFunction.log"
    log.write_text("START\n" + line[:20])
    store = MetricStore()
    tail = EmfTail(tmp_path)
    tail.collect(store)
    assert store.keys() == []
    with log.open("a") as more:
        more.write(line[20:] + "\n")
    tail.collect(store)
    tail.collect(store)
    assert store.values(key, 0, 2e9) == [1.0, 1.0]


def test_access_log_filter_pattern_matches_route_and_status() -> None:
    terms = parse_json_filter('{ ($.routeKey = "POST /callback/{secret}") && ($.status = 429) }')
    assert filter_matches(terms, {"routeKey": "POST /callback/{secret}", "status": "429"})
    assert not filter_matches(terms, {"routeKey": "POST /tasks", "status": "429"})
    assert not filter_matches(terms, {"routeKey": "POST /callback/{secret}", "status": "200"})
    wildcard = parse_json_filter('{ ($.routeKey = "* /tasks*") && ($.status = "4*") }')
    assert filter_matches(wildcard, {"routeKey": "GET /tasks/{task_id}", "status": "404"})
    assert not filter_matches(wildcard, {"routeKey": "GET /tasks/{task_id}", "status": "200"})
    with pytest.raises(UnsupportedAlarm):
        parse_json_filter("[ip, user, status=429]")


def test_age_of_oldest_message_leaves_out_deleted_and_thrice_received_messages() -> None:
    ages = SqsAges()

    def message(message_id: str, sent: float, receives: int) -> dict[str, Any]:
        attributes = {"SentTimestamp": str(int(sent * 1000)), "ApproximateReceiveCount": receives}
        return {"MessageId": message_id, "Attributes": attributes}

    ages.received("q", [message("old", 100.0, 1), message("new", 150.0, 1)])
    assert ages.oldest_age("q", 200.0, queue_empty=False) == 100.0
    ages.received("q", [message("old", 100.0, 3)])
    assert ages.oldest_age("q", 200.0, queue_empty=False) == 50.0
    ages.deleted("q", ["new"])
    assert ages.oldest_age("q", 200.0, queue_empty=False) is None
    assert ages.oldest_age("q", 200.0, queue_empty=True) == 0.0
