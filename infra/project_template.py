"""template.yaml as the harness reads it outside a deployment: the document, its parameter
defaults, a function's environment, and the tasks table as declared."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from infra.local.cloudformation.cfn_yaml import load_cfn_yaml

TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "template.yaml"
PLACEHOLDER_REGION = "us-east-1"
_ACCOUNT = "123456789012"
# samconfig.toml's default environment's stack (per-stack names: the metric namespace).
_STACK_NAME = "pingback-guard-dev"
# Ids shaped like a deployment's, for the resources functions' variables refer to.
PLACEHOLDER_IDS = {
    "TasksTable": "pingback-guard-TasksTable-1A2B3C4D5E6F",
    "WorkerKeysTable": "pingback-guard-WorkerKeysTable-1A2B3C4D5E6F",
    "RequestBudgetsTable": "pingback-guard-RequestBudgetsTable-1A2B3C4D5E6F",
    "DeadLetterQueue": (
        f"https://sqs.{PLACEHOLDER_REGION}.amazonaws.com/{_ACCOUNT}/pingback-guard-DeadLetterQueue-1A2B3C"
    ),
    "CallbackSecret": (
        f"arn:aws:secretsmanager:{PLACEHOLDER_REGION}:{_ACCOUNT}:secret:CallbackSecret-1A2B3C"
    ),
    "PushApi": "a1b2c3d4e5",
    "PushApiStage": "v1",
    "PollerFunction": "pingback-guard-PollerFunction-1A2B3C4D5E6F",
}
TABLE_KEYS_MOTO_TAKES = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "BillingMode",
)


@cache
def project_template() -> dict[str, Any]:
    return load_cfn_yaml(TEMPLATE_PATH)


def parameter_default(template: Mapping[str, Any], name: str) -> Any:
    return template["Parameters"][name]["Default"]


def function_memory_mb(template: Mapping[str, Any], logical_id: str) -> int:
    """A function's MemorySize as deployed with the defaults: its own (a number or a parameter's
    Ref) or the Globals'."""
    shared = template["Globals"]["Function"]["MemorySize"]
    own = template["Resources"][logical_id]["Properties"].get("MemorySize", shared)
    return int(str(_resolved(template, own, PLACEHOLDER_IDS, PLACEHOLDER_REGION)))


def function_traced(template: Mapping[str, Any], logical_id: str) -> bool:
    """Whether a function is deployed with X-Ray's Active tracing at the defaults: its own
    Tracing or the Globals' (a mode or the `Tracing` parameter's Ref)."""
    shared = template["Globals"]["Function"]["Tracing"]
    own = template["Resources"][logical_id]["Properties"].get("Tracing", shared)
    return _resolved(template, own, PLACEHOLDER_IDS, PLACEHOLDER_REGION) == "Active"


def create_tasks_table(client: Any, table_name: str) -> None:
    """Create the table exactly as template.yaml declares its keys and indexes."""
    create_declared_table(client, "TasksTable", table_name)


def create_declared_table(client: Any, logical_id: str, table_name: str) -> None:
    """Create template.yaml's table ``logical_id`` with its declared keys and indexes."""
    properties = project_template()["Resources"][logical_id]["Properties"]
    definition = {key: properties[key] for key in TABLE_KEYS_MOTO_TAKES if key in properties}
    client.create_table(TableName=table_name, **definition)


def functions_environment(
    template: Mapping[str, Any],
    logical_ids: Iterable[str],
    physical_ids: Mapping[str, str],
    region: str,
) -> dict[str, str]:
    """The variables of several functions in one environment (they never disagree)."""
    merged: dict[str, str] = {}
    for logical_id in logical_ids:
        merged.update(function_environment(template, logical_id, physical_ids, region))
    return merged


def function_environment(
    template: Mapping[str, Any],
    logical_id: str,
    physical_ids: Mapping[str, str],
    region: str,
) -> dict[str, str]:
    """A function's variables with Refs resolved: parameters to defaults, resources to ids.

    A variable set by a condition (AWS_ENDPOINT_URL) is left out: its default is no value.
    """
    own = template["Resources"][logical_id]["Properties"].get("Environment", {})
    merged = {**global_variables(template), **own.get("Variables", {})}
    resolved = {
        name: _resolved(template, value, physical_ids, region) for name, value in merged.items()
    }
    return {name: value for name, value in resolved.items() if value is not None}


def placeholder_environment(logical_id: str) -> dict[str, str]:
    """A function's variables as a deploy with default parameters sets them, with
    deployment-shaped placeholder ids for its resources."""
    return function_environment(project_template(), logical_id, PLACEHOLDER_IDS, PLACEHOLDER_REGION)


def global_variables(template: Mapping[str, Any]) -> dict[str, Any]:
    return dict(template["Globals"]["Function"]["Environment"]["Variables"])


def _resolved(
    template: Mapping[str, Any], value: Any, physical_ids: Mapping[str, str], region: str
) -> str | None:
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, Mapping) and isinstance(value.get("Fn::Sub"), str) and len(value) == 1:
        return _substituted(template, value["Fn::Sub"], physical_ids, region)
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        name = value["Ref"]
        if name == "AWS::Region":
            return region
        if name in template.get("Parameters", {}):
            return str(parameter_default(template, name))
        return physical_ids[name]
    return None


def _substituted(
    template: Mapping[str, Any], text: str, physical_ids: Mapping[str, str], region: str
) -> str | None:
    """A one-string Fn::Sub with its ${Name}s resolved like Refs; None if one is unknown."""
    pseudo = {
        "AWS::Region": region,
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::AccountId": _ACCOUNT,
        "AWS::StackName": _STACK_NAME,
    }
    names = re.findall(r"\$\{([^}!]+)\}", text)
    values = {}
    for name in names:
        if name in pseudo:
            values[name] = pseudo[name]
        elif name in template.get("Parameters", {}):
            values[name] = str(parameter_default(template, name))
        elif name in physical_ids:
            values[name] = physical_ids[name]
        else:
            return None
    return re.sub(r"\$\{([^}!]+)\}", lambda found: values[found.group(1)], text)
