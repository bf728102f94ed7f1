"""Each stack alarms on its own data: two stacks in one account and region (dev and prod) never
feed each other's alarms (issue 39, item 7).

Custom and access-log metrics go under the stack's own namespace, PingbackGuard/<stack name>:
CloudWatch keys a metric by namespace, name and dimensions, so another stack's datapoints are
another metric. https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#Namespace
An AWS/* metric is read under a dimension naming one of this stack's resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.template.conftest import STACK_NAMESPACE, of_type


def _metrics(alarm: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "MetricName" in alarm:
        yield alarm
    for query in alarm.get("Metrics", []):
        if "MetricStat" in query:
            yield query["MetricStat"]["Metric"]


def _reads_its_own_stack(metric: dict[str, Any]) -> bool:
    namespace = metric["Namespace"]
    if isinstance(namespace, str) and namespace.startswith("AWS/"):
        return any(not isinstance(item["Value"], str) for item in metric.get("Dimensions", []))
    return bool(namespace == STACK_NAMESPACE)


def test_every_alarm_reads_only_its_own_stack_s_metrics(resources: dict[str, Any]) -> None:
    alarms = dict(of_type(resources, "AWS::CloudWatch::Alarm"))
    assert len(alarms) > 50
    shared = [
        (name, metric["MetricName"])
        for name, alarm in alarms.items()
        for metric in _metrics(alarm["Properties"])
        if not _reads_its_own_stack(metric)
    ]
    assert shared == []


def test_every_access_log_metric_goes_to_the_stack_s_namespace(resources: dict[str, Any]) -> None:
    filters = dict(of_type(resources, "AWS::Logs::MetricFilter"))
    assert len(filters) >= 16
    namespaces = {
        name: transformation["MetricNamespace"]
        for name, metric_filter in filters.items()
        for transformation in metric_filter["Properties"]["MetricTransformations"]
    }
    assert {name: ns for name, ns in namespaces.items() if ns != STACK_NAMESPACE} == {}
