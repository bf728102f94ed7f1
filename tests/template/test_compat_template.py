"""The 2captcha routes (in.php, res.php) in template.yaml: their 429, 4xx and 5xx answers counted
from the access log and alarmed, their throttle, and their concurrency reservation left opt-in."""

from __future__ import annotations

from typing import Any

import pytest

from tests.template.conftest import ROOT, STACK_NAMESPACE

ROUTES = ("in", "res")
# status class -> (the access-log filter's status test, alarm threshold, period)
CLASSES = {
    "Throttled": ('($.status = "429")', 10, 300),
    "4xx": ('($.status = "4*") && ($.status != "429")', 10, 300),
    "5xx": ('($.status = "5*")', 1, 60),
}
FUNCTIONS = {"CompatSubmitFunction": "CompatSubmit", "CompatResultFunction": "CompatResult"}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("answer", sorted(CLASSES))
def test_each_route_s_answers_are_counted_from_the_access_log(
    resources: dict[str, Any], route: str, answer: str
) -> None:
    status, _, _ = CLASSES[answer]
    properties = resources[f"{route}Php{answer}Filter"]["Properties"]
    assert properties["LogGroupName"] == {"Ref": "HttpApiAccessLogGroup"}
    assert properties["FilterPattern"] == (f'{{ ($.routeKey = "* /{route}.php") && {status} }}')
    (transformation,) = properties["MetricTransformations"]
    assert transformation == {
        "MetricNamespace": STACK_NAMESPACE,
        "MetricName": f"{route}Php{answer}",
        "MetricValue": "1",
    }


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("answer", sorted(CLASSES))
def test_each_count_is_alarmed_to_the_topic_both_ways(
    resources: dict[str, Any], route: str, answer: str
) -> None:
    _, threshold, period = CLASSES[answer]
    properties = resources[f"{route}Php{answer}Alarm"]["Properties"]
    assert (properties["Namespace"], properties["MetricName"]) == (
        STACK_NAMESPACE,
        f"{route}Php{answer}",
    )
    assert (properties["Statistic"], properties["Threshold"], properties["Period"]) == (
        "Sum",
        threshold,
        period,
    )
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert properties["TreatMissingData"] == "notBreaching"
    assert properties["AlarmActions"] == properties["OKActions"] == [{"Ref": "AlarmTopic"}]
    suffix = f"{route}-php-{answer.lower()}"
    assert properties["AlarmName"] == {"Fn::Sub": f"${{AWS::StackName}}-{suffix}"}


def test_every_compat_alarm_is_in_the_operations_alarm_table(resources: dict[str, Any]) -> None:
    operations = (ROOT / "docs" / "operations.md").read_text()
    for route in ROUTES:
        for answer in CLASSES:
            assert f"`{route}-php-{answer.lower()}`" in operations


def test_the_compat_routes_are_throttled_by_the_default_route_settings(
    resources: dict[str, Any], template: dict[str, Any]
) -> None:
    api = resources["HttpApi"]["Properties"]
    assert api["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ApiThrottlingRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ApiThrottlingBurstLimit"},
    }
    overridden = [route for route in api.get("RouteSettings", {}) if ".php" in route]
    assert overridden == []
    # Each route's bucket is bounded: the parameter's pattern allows no "unlimited".
    pattern = template["Parameters"]["ApiThrottlingRateLimit"]["AllowedPattern"]
    assert pattern == "^([1-9][0-9]{0,3}|10000)$"


@pytest.mark.parametrize(("function", "prefix"), sorted(FUNCTIONS.items()))
def test_reserved_concurrency_is_opt_in_for_the_compat_functions(
    resources: dict[str, Any], template: dict[str, Any], function: str, prefix: str
) -> None:
    """A default reservation could fail a first deploy (AWS keeps 100 unreserved and a new
    account may have a limit of 10): reserving is a parameter, empty by default."""
    parameter = template["Parameters"][f"{prefix}ReservedConcurrency"]
    assert parameter["Default"] == ""
    condition = f"Reserves{prefix}"
    reserved = resources[function]["Properties"]["ReservedConcurrentExecutions"]
    assert reserved == {
        "Fn::If": [condition, {"Ref": f"{prefix}ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert template["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": f"{prefix}ReservedConcurrency"}, ""]}]
    }


def test_the_operations_guide_says_why_nothing_is_reserved_by_default() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text()
    section = operations.split("### in.php and res.php: what an anonymous caller costs", 1)[1]
    section = section.split("\n## ", 1)[0]
    for cited in (
        "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html",
        "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
        "https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html",
        "bench/compat_refusals.py",
    ):
        assert cited in section
