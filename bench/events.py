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
