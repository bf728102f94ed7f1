"""Events, names and helpers shared by the handler suites (real-shaped events, moto resources)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

from botocore.exceptions import EndpointConnectionError

ROOT = Path(__file__).resolve().parent.parent.parent
EVENT_DIRS = (ROOT / "tests" / "events", ROOT / "events")
SECRET = "PgLocalCallbackSecretForTestsOnly0000001"
PREVIOUS_SECRET = "PgPreviousSecretStillAccepted000000002"
API_KEY = "0123456789abcdef0123456789abcdef"
TABLE = "pg-tasks"
TOKEN = "03AFcWeA" + "H" * 700


def event(name: str) -> dict[str, Any]:
    """Raw generated events live in tests/events; the `sam local invoke` samples in events/."""
    path = next(folder / name for folder in EVENT_DIRS if (folder / name).exists())
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def callback_get(task_id: str, code: str, secret: str = SECRET) -> dict[str, Any]:
    shaped = event("callback_get_captchaai.json")
    shaped["pathParameters"] = {"secret": secret}
    shaped["rawPath"] = shaped["requestContext"]["http"]["path"] = f"/callback/{secret}"
    shaped["queryStringParameters"] = {"id": task_id, "code": code}
    shaped["rawQueryString"] = f"id={task_id}&code={code}"
    return shaped


def item(stack: dict[str, Any], task_id: str) -> dict[str, Any] | None:
    found = stack["dynamodb"].get_item(
        TableName=TABLE, Key={"task_id": {"S": task_id}}, ConsistentRead=True
    )
    return found.get("Item")


def fail_table_writes(module: ModuleType) -> None:
    def unavailable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.test")

    module.service._store._client.meta.events.register(
        "before-send.dynamodb.UpdateItem", unavailable
    )


def emitted_metrics(output: str) -> dict[str, float]:
    totals: dict[str, float] = {}
    for line in output.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        for definition in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            value = document[definition["Name"]]
            totals[definition["Name"]] = totals.get(definition["Name"], 0) + (
                sum(value) if isinstance(value, list) else value
            )
    return totals
