"""What the benchmarks read from template.yaml: memory, TTL, schedule, alarms, the table."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from infra.project_template import (
    create_tasks_table,
    global_variables,
    parameter_default,
    placeholder_environment,
)
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.settings.poller import PollerSettings

HANDLER_FUNCTIONS = {
    "submit": "SubmitFunction",
    "get_task": "GetTaskFunction",
    "callback": "CallbackFunction",
    "replay": "ReplayFunction",
    "poller": "PollerFunction",
    "report": "ReportFunction",
    "push": "PushFunction",
}
ALARM_TYPE = "AWS::CloudWatch::Alarm"
DASHBOARD_TYPE = "AWS::CloudWatch::Dashboard"
SECRET_TYPE = "AWS::SecretsManager::Secret"
KMS_KEY_TYPE = "AWS::KMS::Key"
MINUTES_PER_MONTH = 730 * 60


@dataclass(frozen=True)
class TemplateFacts:
    memory_mb: int
    result_ttl_days: int
    poll_rate_minutes: int
    due_shards: int
    alarm_metrics: int
    alarms: int
    dashboards: int
    secrets: int
    kms_keys: int
    custom_metric_names: frozenset[str]
    access_log_format: str

    @property
    def sweeps_per_month(self) -> float:
        return MINUTES_PER_MONTH / self.poll_rate_minutes


def template_facts(template: Mapping[str, Any]) -> TemplateFacts:
    resources: Mapping[str, Any] = template["Resources"]
    # The stack's own namespace, as the template writes it (a Fn::Sub of the stack name).
    namespace = global_variables(template)["POWERTOOLS_METRICS_NAMESPACE"]
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == ALARM_TYPE]
    return TemplateFacts(
        memory_mb=int(template["Globals"]["Function"]["MemorySize"]),
        result_ttl_days=int(parameter_default(template, "ResultTtlDays")),
        poll_rate_minutes=int(parameter_default(template, "PollRateMinutes")),
        due_shards=int(parameter_default(template, "DueShards")),
        alarm_metrics=sum(metrics_in_alarm(alarm) for alarm in alarms),
        alarms=len(alarms),
        dashboards=_count_of_type(resources, DASHBOARD_TYPE),
        secrets=_count_of_type(resources, SECRET_TYPE),
        kms_keys=_count_of_type(resources, KMS_KEY_TYPE),
        custom_metric_names=frozenset(
            _alarm_metric_names(alarms, namespace) | _dashboard_metric_names(resources, namespace)
        ),
        access_log_format=str(resources["HttpApi"]["Properties"]["AccessLogSettings"]["Format"]),
    )


def index_attributes(template: Mapping[str, Any], index_name: str) -> frozenset[str]:
    """Attributes stored in an index entry: the table's keys, the index keys, the projection."""
    table = template["Resources"]["TasksTable"]["Properties"]
    index = next(i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == index_name)
    keys = [key["AttributeName"] for key in [*table["KeySchema"], *index["KeySchema"]]]
    projected = index["Projection"].get("NonKeyAttributes", [])
    return frozenset([*keys, *projected])


def metrics_in_alarm(alarm: Mapping[str, Any]) -> int:
    """CloudWatch bills an alarm per metric it evaluates (a metric-math alarm: each input)."""
    if "MetricName" in alarm:
        return 1
    return sum(1 for query in alarm.get("Metrics", []) if "MetricStat" in query)


def _count_of_type(resources: Mapping[str, Any], resource_type: str) -> int:
    return sum(1 for resource in resources.values() if resource["Type"] == resource_type)


def _alarm_metric_names(alarms: list[Mapping[str, Any]], namespace: Any) -> set[str]:
    names = {str(a["MetricName"]) for a in alarms if a.get("Namespace") == namespace}
    for alarm in alarms:
        for query in alarm.get("Metrics", []):
            metric = query.get("MetricStat", {}).get("Metric", {})
            if metric.get("Namespace") == namespace:
                names.add(str(metric["MetricName"]))
    return names


_NAMESPACE_MARK = "stack-namespace"


def _dashboard_metric_names(resources: Mapping[str, Any], namespace: Any) -> set[str]:
    names: set[str] = set()
    for resource in resources.values():
        if resource["Type"] != DASHBOARD_TYPE:
            continue
        body, variables = _sub_parts(resource["Properties"]["DashboardBody"])
        for placeholder, replacement in variables.items():
            written = _NAMESPACE_MARK if replacement == namespace else str(replacement)
            body = body.replace("${" + placeholder + "}", written)
        names.update(re.findall(rf'\["{_NAMESPACE_MARK}",\s*"(\w+)"', body))
    return names


def _sub_parts(body: Any) -> tuple[str, Mapping[str, Any]]:
    if isinstance(body, str):
        return body, {}
    substitution = body["Fn::Sub"]
    if isinstance(substitution, str):
        return substitution, {}
    return str(substitution[0]), substitution[1]


def new_task_store(client: Any, table_name: str) -> DynamoDbTaskStore:
    """A new tasks table as the template declares it, and the store over it as deployed."""
    create_tasks_table(client, table_name)
    deployed = deployed_poller_settings().table
    return DynamoDbTaskStore(client, replace(deployed, table_name=table_name))


def deployed_poller_settings() -> PollerSettings:
    """The poller's settings as a deploy with default parameters gives them."""
    return PollerSettings.from_env(placeholder_environment("PollerFunction"))
