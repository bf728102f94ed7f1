"""What the benchmarks read from a template."""

from __future__ import annotations

from typing import Any

from bench.template_facts import (
    MINUTES_PER_MONTH,
    index_attributes,
    metrics_in_alarm,
    template_facts,
)
from infra.project_template import function_environment
from tests.support import template

SMALL_TEMPLATE: dict[str, Any] = {
    "Parameters": {"Level": {"Type": "String", "Default": "INFO"}},
    "Globals": {
        "Function": {
            "Environment": {
                "Variables": {
                    "LEVEL": {"Ref": "Level"},
                    "TABLE": {"Ref": "Table"},
                    "REGION": {"Ref": "AWS::Region"},
                    "SHARDS": 8,
                    "ENDPOINT": {"Fn::If": ["Local", "x", {"Ref": "AWS::NoValue"}]},
                }
            }
        }
    },
    "Resources": {
        "Table": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "KeySchema": [{"AttributeName": "task_id", "KeyType": "HASH"}],
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": "DueIndex",
                        "KeySchema": [{"AttributeName": "due_at", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n"]},
                    }
                ],
            },
        },
        "Fn": {
            "Type": "AWS::Serverless::Function",
            "Properties": {"Environment": {"Variables": {"QUEUE": {"Ref": "Queue"}}}},
        },
    },
}


def test_a_functions_environment_resolves_refs_and_leaves_conditional_values_out() -> None:
    environment = function_environment(
        SMALL_TEMPLATE, "Fn", {"Table": "tasks", "Queue": "https://q"}, "eu-west-1"
    )
    assert environment == {
        "LEVEL": "INFO",
        "TABLE": "tasks",
        "REGION": "eu-west-1",
        "SHARDS": "8",
        "QUEUE": "https://q",
    }


def test_an_alarm_is_billed_per_metric_it_reads() -> None:
    assert metrics_in_alarm({"MetricName": "Errors"}) == 1
    math_alarm = {"Metrics": [{"Id": "sum", "Expression": "a+b"}, {"MetricStat": {}}, {}]}
    assert metrics_in_alarm(math_alarm) == 1


def test_index_attributes_are_the_keys_and_the_projection() -> None:
    table = SMALL_TEMPLATE["Resources"]["Table"]
    document = {"Resources": {"TasksTable": table}}
    assert index_attributes(document, "DueIndex") == frozenset({"task_id", "due_at", "n"})


def test_the_real_template_reads_consistently() -> None:
    facts = template_facts(template())
    assert facts.memory_mb > 0 and facts.result_ttl_days > 0
    assert facts.alarm_metrics >= facts.alarms > 0
    assert facts.sweeps_per_month == MINUTES_PER_MONTH / facts.poll_rate_minutes
    assert "$context.requestId" in facts.access_log_format
    assert facts.custom_metric_names
