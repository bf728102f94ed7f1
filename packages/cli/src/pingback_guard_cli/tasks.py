"""`task show`: a task's record as the table holds it, the token hidden unless asked for."""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from pingback_guard_cli.errors import CliFailure, ExitCode
from pingback_guard_cli.stack import Aws, Stack

SECRET_ATTRIBUTES = ("solution", "pingback_url")
_MOMENT_SUFFIXES = ("_at", "_after", "_until")
_deserializer = TypeDeserializer()


def task_record(aws: Aws, stack: Stack, task_id: str, show_token: bool) -> dict[str, Any]:
    answer = aws.client("dynamodb").get_item(
        TableName=stack.output("TasksTableName"),
        Key={"task_id": {"S": task_id}},
        ConsistentRead=True,
    )
    item = answer.get("Item")
    if item is None:
        raise CliFailure(ExitCode.NOT_FOUND, f"no task {task_id} in {stack.name}")
    record = {
        name: _plain(_deserializer.deserialize(value)) for name, value in sorted(item.items())
    }
    if not show_token:
        for name in SECRET_ATTRIBUTES:
            if isinstance(record.get(name), str):
                record[name] = f"<hidden, {len(record[name])} characters; --show-token shows it>"
    return record


def is_moment(name: str) -> bool:
    """Attributes holding epoch seconds (submitted_at, usable_until, ...)."""
    return name.endswith(_MOMENT_SUFFIXES)


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal: show them as int or float."""
    if hasattr(value, "as_integer_ratio") and not isinstance(value, bool | int | float):
        return int(value) if value == value.to_integral_value() else float(value)
    return value
