"""Lambda events shaped from the repository's sample events (events/*.json)."""

from __future__ import annotations

import copy
import hashlib
import json
import secrets
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
EVENTS_DIR = ROOT / "events"
TOKEN_PREFIX = "03AFcWeA"


def recaptcha_token(length: int) -> str:
    """A token shaped like reCAPTCHA's: URL-safe characters, no spaces."""
    body = secrets.token_urlsafe(length)[: length - len(TOKEN_PREFIX)]
    return TOKEN_PREFIX + body


@cache
def _sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return loaded


def submit_event(document: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """POST /tasks with the sample's reCAPTCHA document, or with this one."""
    event = copy.deepcopy(_sample("submit_task.json"))
    if document is not None:
        event["body"] = json.dumps(document)
    return event


def schedule_event() -> dict[str, Any]:
    return copy.deepcopy(_sample("poller_schedule.json"))


def callback_event(secret: str, task_id: str, code: str) -> dict[str, Any]:
    """CaptchaAI's pingback: GET /callback/{secret}?id=..&code=.."""
    event = copy.deepcopy(_sample("callback_get.json"))
    path = f"/callback/{secret}"
    query = {"id": task_id, "code": code}
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"secret": secret}
    event["queryStringParameters"] = query
    event["rawQueryString"] = urlencode(query)
    return event


def get_task_event(task_id: str) -> dict[str, Any]:
    event = copy.deepcopy(_sample("get_task.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/tasks/{task_id}"
    event["pathParameters"] = {"task_id": task_id}
    return event


def sqs_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What Lambda's SQS event source hands the replay function for received messages."""
    template = _sample("replay_dead_letters.json")["Records"][0]
    records = []
    for message in messages:
        record = copy.deepcopy(template)
        record.update(
            messageId=message["MessageId"],
            receiptHandle=message["ReceiptHandle"],
            body=message["Body"],
            md5OfBody=hashlib.md5(message["Body"].encode()).hexdigest(),
        )
        record["attributes"]["ApproximateReceiveCount"] = message.get("Attributes", {}).get(
            "ApproximateReceiveCount", "1"
        )
        records.append(record)
    return {"Records": records}


def push_connect_event(connection_id: str) -> dict[str, Any]:
    """The WebSocket API's $connect (IAM auth) as the sample GET's caller."""
    caller = _sample("get_task.json")["requestContext"]["authorizer"]["iam"]["userArn"]
    return {
        "headers": {"Host": "benchpush01.execute-api.us-east-1.amazonaws.com"},
        "isBase64Encoded": False,
        "requestContext": {
            "routeKey": "$connect",
            "eventType": "CONNECT",
            "connectionId": connection_id,
            "stage": "v1",
            "identity": {"userArn": caller, "sourceIp": "203.0.113.7"},
        },
    }


def result_event(item: Mapping[str, Any]) -> dict[str, Any]:
    """The result bus's event for a task's item, as the pipe's input template writes it (every
    detail value a string, "" where the item has none; no token: PublishTokens=false)."""

    def text(name: str) -> str:
        value = item.get(name, {})
        return str(value.get("S", value.get("N", ""))) if isinstance(value, Mapping) else ""

    return {
        "version": "0",
        "id": "5f0e6b1c-0000-4000-8000-000000000000",
        "detail-type": "Task Result",
        "source": "pingback-guard",
        "account": "123456789012",
        "time": "2026-12-03T20:00:05Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {
            "schema_version": "1",
            "task_id": text("task_id"),
            "status": text("status"),
            "previous_status": "PENDING",
            "delivered_via": text("delivered_via"),
            "finished_at_earliest": text("finished_after"),
            "finished_at_latest": text("received_at"),
            "usable_until": text("usable_until"),
            "error": text("error"),
            "owner": text("owner"),
            "origin": text("origin"),
            "pingback_forward": text("pingback_forward"),
        },
    }
