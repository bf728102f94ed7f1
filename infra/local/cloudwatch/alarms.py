"""CloudWatch alarm semantics, evaluated locally (moto stores alarms and never evaluates them).

Pure logic: a metric store, the statistics, metric math, and the state an alarm takes for the
datapoints of its evaluation window. Where the datapoints come from and where state changes go
is infra.local.cloudwatch.alarm_runtime.

Time: datapoints carry wall-clock timestamps; an alarm's Period (nominal seconds, as written in
the template) lasts Period / time_scale wall seconds, so a 60 s alarm over a run at time scale 12
has 5 s buckets. Buckets are aligned to the moment evaluation started, and a window is evaluated
only once all of its buckets lie after that moment (an alarm starts INSUFFICIENT_DATA, as a new
alarm does).
"""

from __future__ import annotations

import ast
import math
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

OK = "OK"
ALARM = "ALARM"
INSUFFICIENT_DATA = "INSUFFICIENT_DATA"

Dimensions = frozenset[tuple[str, str]]
Series = dict[int, float]
"""Bucket index -> value; a bucket without a value is missing data."""

_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "LessThanThreshold": lambda value, threshold: value < threshold,
    "LessThanOrEqualToThreshold": lambda value, threshold: value <= threshold,
}
TREAT_MISSING = frozenset({"missing", "ignore", "breaching", "notBreaching"})


class UnsupportedAlarm(ValueError):
    """The alarm uses something this evaluator does not implement (it is then not evaluated)."""


@dataclass(frozen=True)
class MetricKey:
    namespace: str
    name: str
    dimensions: Dimensions = frozenset()

    @classmethod
    def of(cls, namespace: str, name: str, **dimensions: str) -> MetricKey:
        return cls(namespace, name, frozenset(dimensions.items()))


class MetricStore:
    """Every datapoint put during the run, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._points: dict[MetricKey, list[tuple[float, float]]] = defaultdict(list)

    def put(self, key: MetricKey, at: float, value: float) -> None:
        with self._lock:
            self._points[key].append((at, value))

    def values(self, key: MetricKey, start: float, end: float) -> list[float]:
        with self._lock:
            return [value for at, value in self._points.get(key, ()) if start <= at < end]

    def keys(self) -> list[MetricKey]:
        with self._lock:
            return list(self._points)


def statistic(values: Sequence[float], name: str) -> float:
    """CloudWatch's statistic of one period's datapoints (values must not be empty)."""
    if name == "SampleCount":
        return float(len(values))
    if name == "Sum":
        return float(sum(values))
    if name == "Average":
        return float(sum(values)) / len(values)
    if name == "Minimum":
        return float(min(values))
    if name == "Maximum":
        return float(max(values))
    if name.startswith("p"):
        return _percentile(values, float(name[1:]))
    raise UnsupportedAlarm(f"statistic {name!r}")


def _percentile(values: Sequence[float], percent: float) -> float:
    """Nearest rank: the smallest value with at least `percent` % of the values at or below it."""
    if not 0 <= percent <= 100:
        raise UnsupportedAlarm(f"percentile p{percent}")
    ordered = sorted(values)
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return float(ordered[rank - 1])


@dataclass(frozen=True)
class MetricQuery:
    """One entry of an alarm's Metrics (or the alarm's own single metric, with id "m")."""

    id: str
    metric: MetricKey | None
    stat: str | None
    expression: str | None
    return_data: bool


@dataclass(frozen=True)
class AlarmDefinition:
    name: str
    logical_id: str
    description: str
    queries: tuple[MetricQuery, ...]
    period: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing_data: str
    alarm_actions: tuple[str, ...]
    ok_actions: tuple[str, ...]
    insufficient_data_actions: tuple[str, ...]

    @property
    def returned(self) -> MetricQuery:
        returned = [query for query in self.queries if query.return_data]
        if len(returned) != 1:
            raise UnsupportedAlarm(f"{self.name}: exactly one query must return data")
        return returned[0]

    def breaches(self, value: float) -> bool:
        return _COMPARISONS[self.comparison](value, self.threshold)


def alarm_definition(name: str, logical_id: str, properties: Mapping[str, Any]) -> AlarmDefinition:
    """From the resolved Properties of an AWS::CloudWatch::Alarm."""
    comparison = str(properties["ComparisonOperator"])
    if comparison not in _COMPARISONS:
        raise UnsupportedAlarm(f"{name}: comparison {comparison}")
    treat_missing = str(properties.get("TreatMissingData", "missing"))
    if treat_missing not in TREAT_MISSING:
        raise UnsupportedAlarm(f"{name}: TreatMissingData {treat_missing}")
    if "Metrics" in properties:
        queries = tuple(_query(entry) for entry in properties["Metrics"])
        periods = {
            int(entry["MetricStat"]["Period"])
            for entry in properties["Metrics"]
            if "MetricStat" in entry
        }
        if len(periods) != 1:
            raise UnsupportedAlarm(f"{name}: metric math needs one Period for all its metrics")
        period = periods.pop()
    else:
        stat = properties.get("Statistic") or properties.get("ExtendedStatistic")
        queries = (MetricQuery("m", _metric_key(properties), str(stat), None, return_data=True),)
        period = int(properties["Period"])
    evaluation_periods = int(properties["EvaluationPeriods"])
    return AlarmDefinition(
        name=name,
        logical_id=logical_id,
        description=str(properties.get("AlarmDescription", "")),
        queries=queries,
        period=period,
        evaluation_periods=evaluation_periods,
        datapoints_to_alarm=int(properties.get("DatapointsToAlarm", evaluation_periods)),
        threshold=float(properties["Threshold"]),
        comparison=comparison,
        treat_missing_data=treat_missing,
        alarm_actions=tuple(str(arn) for arn in properties.get("AlarmActions", [])),
        ok_actions=tuple(str(arn) for arn in properties.get("OKActions", [])),
        insufficient_data_actions=tuple(
            str(arn) for arn in properties.get("InsufficientDataActions", [])
        ),
    )


def _metric_key(metric: Mapping[str, Any]) -> MetricKey:
    return MetricKey(
        str(metric["Namespace"]),
        str(metric["MetricName"]),
        frozenset((str(item["Name"]), str(item["Value"])) for item in metric.get("Dimensions", [])),
    )


def _query(entry: Mapping[str, Any]) -> MetricQuery:
    return_data = entry.get("ReturnData", True) in (True, "true", "True")
    if "Expression" in entry:
        return MetricQuery(str(entry["Id"]), None, None, str(entry["Expression"]), return_data)
    stat = entry["MetricStat"]
    return MetricQuery(
        str(entry["Id"]), _metric_key(stat["Metric"]), str(stat["Stat"]), None, return_data
    )


@dataclass(frozen=True)
class Window:
    """The buckets of one evaluation: indexes `first`..`first + count - 1`."""

    origin: float
    bucket_seconds: float
    first: int
    count: int

    @property
    def indexes(self) -> range:
        return range(self.first, self.first + self.count)

    def bounds(self, index: int) -> tuple[float, float]:
        start = self.origin + index * self.bucket_seconds
        return start, start + self.bucket_seconds


def evaluation_window(
    definition: AlarmDefinition, origin: float, now: float, time_scale: float
) -> Window | None:
    """The last EvaluationPeriods complete buckets before `now`; None while they are not all
    after `origin`."""
    complete = math.floor((now - origin) / (definition.period / time_scale))
    return window_ending(definition, origin, complete, time_scale)


def window_ending(
    definition: AlarmDefinition, origin: float, complete: int, time_scale: float
) -> Window | None:
    """The EvaluationPeriods buckets before bucket `complete`; None if one is before `origin`."""
    first = complete - definition.evaluation_periods
    if first < 0:
        return None
    return Window(origin, definition.period / time_scale, first, definition.evaluation_periods)


def datapoints(definition: AlarmDefinition, store: MetricStore, window: Window) -> Series:
    """The values the alarm compares with its threshold, per bucket of the window."""
    series = {
        query.id: _metric_series(query, store, window)
        for query in definition.queries
        if query.metric is not None
    }
    returned = definition.returned
    if returned.expression is None:
        return series[returned.id]
    expressions = {query.id: query.expression for query in definition.queries if query.expression}
    value = _Expression(series, expressions, window).evaluate(returned.expression)
    if isinstance(value, float):
        return dict.fromkeys(window.indexes, value)
    return value


def _metric_series(query: MetricQuery, store: MetricStore, window: Window) -> Series:
    assert query.metric is not None
    assert query.stat is not None
    series: Series = {}
    for index in window.indexes:
        values = store.values(query.metric, *window.bounds(index))
        if values:
            series[index] = statistic(values, query.stat)
    return series


Value = Series | float


class _Expression:
    """The metric math subset alarms here use: + - * /, comparisons (== != < <= > >=, 1 or 0),
    AND / OR (also && and ||), IF(condition, true[, false]), FILL, SUM/MIN/MAX/AVG of lists, ABS.

    As in CloudWatch, an arithmetic, comparison or logical result is missing in a bucket where an
    operand is missing; IF is missing where its condition is, and where it is false without a
    false value.
    """

    def __init__(
        self, series: Mapping[str, Series], expressions: Mapping[str, str], window: Window
    ) -> None:
        self._series = series
        self._expressions = expressions
        self._window = window

    def evaluate(self, text: str) -> Value:
        try:
            tree = ast.parse(_python_operators(text), mode="eval")
        except SyntaxError as error:
            raise UnsupportedAlarm(f"metric math {text!r}") from error
        return self._node(tree.body)

    def _node(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._call(node.func.id.upper(), node.args)
        return self._operation(node)

    def _operation(self, node: ast.expr) -> Value:
        """Arithmetic, comparison and logic, bucket by bucket."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return _combine(-1.0, self._node(node.operand), lambda a, b: a * b)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            operator = _OPERATORS[type(node.op)]
            return _combine(self._node(node.left), self._node(node.right), operator)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _TESTS:
            test = _TESTS[type(node.ops[0])]
            return _combine(
                self._node(node.left),
                self._node(node.comparators[0]),
                lambda a, b: float(test(a, b)),
            )
        if isinstance(node, ast.BoolOp):
            both = _LOGICAL[type(node.op)]
            values = [self._node(operand) for operand in node.values]
            result = values[0]
            for value in values[1:]:
                result = _combine(result, value, lambda a, b: float(both(bool(a), bool(b))))
            return result
        raise UnsupportedAlarm(f"metric math node {ast.dump(node)}")

    def _name(self, name: str) -> Value:
        if name in self._series:
            return self._series[name]
        if name in self._expressions:
            return self.evaluate(self._expressions[name])
        raise UnsupportedAlarm(f"metric math refers to unknown id {name!r}")

    def _call(self, function: str, arguments: list[ast.expr]) -> Value:
        if function == "FILL":
            filler = self._node(arguments[1])
            if not isinstance(filler, float):
                raise UnsupportedAlarm("FILL with a series as filler")
            return self._fill(self._node(arguments[0]), filler)
        if function == "IF" and len(arguments) in (2, 3):
            return self._if(*(self._node(argument) for argument in arguments))
        if function == "ABS":
            return _map(self._node(arguments[0]), abs)
        if function in _AGGREGATES and len(arguments) == 1:
            listed = arguments[0]
            items = listed.elts if isinstance(listed, ast.List) else [listed]
            return self._aggregate(function, [self._node(item) for item in items])
        raise UnsupportedAlarm(f"metric math function {function}")

    def _if(self, condition: Value, when_true: Value, when_false: Value | None = None) -> Value:
        result: Series = {}
        for index in self._window.indexes:
            test = _at(condition, index)
            chosen = when_true if test else when_false
            if test is None or chosen is None:
                continue
            value = _at(chosen, index)
            if value is not None:
                result[index] = value
        return result

    def _fill(self, value: Value, filler: float) -> Value:
        if isinstance(value, float):
            return value
        return {index: value.get(index, filler) for index in self._window.indexes}

    def _aggregate(self, function: str, values: list[Value]) -> Value:
        aggregate = _AGGREGATES[function]
        result: Series = {}
        for index in self._window.indexes:
            present = [
                value if isinstance(value, float) else value[index]
                for value in values
                if isinstance(value, float) or index in value
            ]
            if present:
                result[index] = aggregate(present)
        return result


def _combine(left: Value, right: Value, operator: Callable[[float, float], float]) -> Value:
    if isinstance(left, float) and isinstance(right, float):
        return operator(left, right)
    if isinstance(left, float):
        assert not isinstance(right, float)
        return {index: operator(left, value) for index, value in right.items()}
    if isinstance(right, float):
        return {index: operator(value, right) for index, value in left.items()}
    return {index: operator(left[index], right[index]) for index in left.keys() & right.keys()}


def _at(value: Value, index: int) -> float | None:
    return value if isinstance(value, float) else value.get(index)


def _python_operators(text: str) -> str:
    """Metric math's logical operators as Python's, so that ast parses the expression."""
    spelled = text.strip().replace("&&", " and ").replace("||", " or ")
    return re.sub(r"\b(AND|OR)\b", lambda word: word.group(1).lower(), spelled)


def _map(value: Value, function: Callable[[float], float]) -> Value:
    if isinstance(value, float):
        return function(value)
    return {index: function(item) for index, item in value.items()}


def _divide(left: float, right: float) -> float:
    return left / right if right else math.nan


_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _divide,
}
_TESTS: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
_LOGICAL: dict[type[ast.boolop], Callable[[bool, bool], bool]] = {
    ast.And: lambda a, b: a and b,
    ast.Or: lambda a, b: a or b,
}
_AGGREGATES: dict[str, Callable[[list[float]], float]] = {
    "SUM": lambda values: float(sum(values)),
    "MIN": lambda values: float(min(values)),
    "MAX": lambda values: float(max(values)),
    "AVG": lambda values: float(sum(values)) / len(values),
}


@dataclass(frozen=True)
class Decision:
    state: str
    reason: str


def decide(
    definition: AlarmDefinition, values: Series, window: Window, current_state: str
) -> Decision:
    """The state CloudWatch gives the alarm for these datapoints (M out of N, missing data).

    breaching / notBreaching: every missing bucket counts as breaching / not breaching.
    missing / ignore: only present datapoints count; when all are missing, `missing` goes to
    INSUFFICIENT_DATA and `ignore` keeps the state; when fewer datapoints than DatapointsToAlarm
    are present, the alarm goes to ALARM if every one of them breaches (AWS's documented table).
    """
    present = [values[index] for index in window.indexes if index in values]
    nan_free = [value for value in present if not math.isnan(value)]
    breaching = sum(1 for value in nan_free if definition.breaches(value))
    missing = window.count - len(nan_free)
    needed = definition.datapoints_to_alarm
    shown = ", ".join(f"{values[index]:g}" if index in values else "-" for index in window.indexes)
    reason = (
        f"[{shown}] vs {definition.comparison} {definition.threshold:g},"
        f" {needed} of {window.count} to alarm, missing data {definition.treat_missing_data}"
    )
    treat = definition.treat_missing_data
    if treat == "breaching":
        breaching += missing
    if treat in {"breaching", "notBreaching"}:
        return Decision(ALARM if breaching >= needed else OK, reason)
    if not nan_free:
        return Decision(INSUFFICIENT_DATA if treat == "missing" else current_state, reason)
    if breaching >= needed or (len(nan_free) < needed and breaching == len(nan_free)):
        return Decision(ALARM, reason)
    return Decision(OK, reason)


@dataclass(frozen=True)
class Transition:
    alarm: str
    logical_id: str
    old_state: str
    new_state: str
    at: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "alarm": self.alarm,
            "logical_id": self.logical_id,
            "old_state": self.old_state,
            "new_state": self.new_state,
            "at": round(self.at, 3),
            "reason": self.reason,
        }


@dataclass
class AlarmBoard:
    """The alarms' current states and every transition, evaluated against one metric store.

    Like CloudWatch, every period is evaluated once it is over, even when evaluation runs late
    (a busy machine): the windows missed since the last call are evaluated in order, each
    transition stamped with the end of its window. `lag_seconds` leaves datapoints time to
    arrive (a log line is written a moment after its timestamp).
    """

    definitions: Sequence[AlarmDefinition]
    store: MetricStore
    time_scale: float
    origin: float
    lag_seconds: float = 0.0
    states: dict[str, str] = field(default_factory=dict)
    history: list[Transition] = field(default_factory=list)
    _evaluated: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for definition in self.definitions:
            self.states.setdefault(definition.name, INSUFFICIENT_DATA)

    def evaluate(self, now: float) -> list[Transition]:
        """Evaluate every period of every alarm that ended by `now - lag_seconds`."""
        changes: list[Transition] = []
        for definition in self.definitions:
            bucket_seconds = definition.period / self.time_scale
            complete = math.floor((now - self.lag_seconds - self.origin) / bucket_seconds)
            start = self._evaluated.get(definition.name, definition.evaluation_periods - 1) + 1
            for index in range(start, complete + 1):
                window = window_ending(definition, self.origin, index, self.time_scale)
                if window is not None:
                    change = self._evaluate_window(definition, window)
                    if change is not None:
                        changes.append(change)
            self._evaluated[definition.name] = max(complete, start - 1)
        return changes

    def _evaluate_window(self, definition: AlarmDefinition, window: Window) -> Transition | None:
        current = self.states[definition.name]
        decision = decide(definition, datapoints(definition, self.store, window), window, current)
        if decision.state == current:
            return None
        ended = window.bounds(window.first + window.count - 1)[1]
        change = Transition(
            definition.name, definition.logical_id, current, decision.state, ended, decision.reason
        )
        self.states[definition.name] = decision.state
        self.history.append(change)
        return change


def actions_for(definition: AlarmDefinition, state: str) -> Iterable[str]:
    if state == ALARM:
        return definition.alarm_actions
    if state == OK:
        return definition.ok_actions
    return definition.insufficient_data_actions
