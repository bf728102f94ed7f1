"""Helpers shared by test suites: resources built from template.yaml itself."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from infra.local.cfn_yaml import load_cfn_yaml

TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "template.yaml"
TABLE_KEYS_MOTO_TAKES = (
    "AttributeDefinitions",
    "KeySchema",
    "GlobalSecondaryIndexes",
    "BillingMode",
)


@cache
def template() -> dict[str, Any]:
    """template.yaml as the SAM transform receives it (its Fn::ForEach loops expanded)."""
    return load_cfn_yaml(TEMPLATE_PATH)


def create_tasks_table(client: Any, table_name: str) -> None:
    """Create the table exactly as template.yaml declares its keys and indexes."""
    properties = template()["Resources"]["TasksTable"]["Properties"]
    definition = {key: properties[key] for key in TABLE_KEYS_MOTO_TAKES if key in properties}
    client.create_table(TableName=table_name, **definition)
