"""Events, names and helpers shared by the handler suites (real-shaped events, moto resources)."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pytest

from infra.local.runtime.aws_hooks import AwsCallHooks
from infra.local.runtime.faults import FaultRule
from pingback_guard import aws_clients
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.task import NewTask
from pingback_guard.logic import capability
from pingback_guard.settings.table import TableSettings
from tests.fakes import TOKEN_LIFETIMES, nonce_for, token_request

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


def capability_for(task_id: str, secret: str = SECRET, issued_at: float | None = None) -> str:
    """The capability a submit for ``task_id`` would have minted (tests use a stable nonce),
    issued now unless said otherwise."""
    issued = time.time() if issued_at is None else issued_at
    return capability.token_for(secret, nonce_for(task_id), int(issued))


def callback_get(task_id: str, code: str, secret: str | None = None) -> dict[str, Any]:
    """A CaptchaAI GET pingback; by default on the task's own capability URL."""
    secret = capability_for(task_id) if secret is None else secret
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


def table_writes_unavailable(client: Any) -> AwsCallHooks:
    """From now on every UpdateItem through `client` fails to connect, as when the table is
    down, until the returned hooks' rules are cleared (`set_rules(())`)."""
    return _unavailable(client, "dynamodb", "UpdateItem")


def table_writes_failing() -> AbstractContextManager[object]:
    """DynamoDB clients the handlers make inside the block fail to connect on UpdateItem, for
    good (a handler makes its clients at import, the callback at its first proven pingback)."""
    return _clients_failing("dynamodb_client", "dynamodb", "UpdateItem")


def dead_letters_failing() -> AbstractContextManager[object]:
    """SQS clients the handlers make inside the block fail to connect on SendMessage."""
    return _clients_failing("sqs_client", "sqs", "SendMessage")


def _clients_failing(factory: str, service: str, operation: str) -> AbstractContextManager[object]:
    make_client = getattr(aws_clients, factory)

    def failing_client() -> Any:
        client = make_client()
        _unavailable(client, service, operation)
        return client

    return mock.patch.object(aws_clients, factory, failing_client)


def _unavailable(client: Any, service: str, operation: str) -> AwsCallHooks:
    hooks = AwsCallHooks("test", report=lambda _call: None)
    hooks.set_rules((FaultRule(mode="unavailable", service=service, operation=operation),))
    hooks.attach(client.meta.events)
    return hooks


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


def with_principal(shaped: dict[str, Any], user_arn: str | None) -> dict[str, Any]:
    """The event as API Gateway's IAM authorizer would pass it for ``user_arn`` (None: absent)."""
    context = shaped["requestContext"]
    if user_arn is None:
        context.pop("authorizer", None)
    else:
        context["authorizer"] = {"iam": {"accountId": "123456789012", "userArn": user_arn}}
    return shaped


OWNER = "arn:aws:iam::123456789012:user/captcha-worker"


@dataclass(frozen=True)
class Handlers:
    """One test's stack: its moto resources, its handlers loaded fresh with the template's
    environment, what they printed, and the monkeypatch for what a test replaces."""

    stack: dict[str, Any]
    load: Callable[[str], ModuleType]
    monkeypatch: pytest.MonkeyPatch
    capsys: pytest.CaptureFixture[str]

    def item(self, task_id: str) -> dict[str, Any] | None:
        return item(self.stack, task_id)

    def register(self, task_id: str, nonce: str | None = "own", owner: str | None = OWNER) -> None:
        """A PENDING task as submit records it (nonce None: a task from before per-task
        nonces)."""
        settings = TableSettings(TABLE, "DueIndex", 4, 7 * 86400, TOKEN_LIFETIMES, 600)
        store = DynamoDbTaskStore(self.stack["dynamodb"], settings)
        proven = nonce_for(task_id) if nonce == "own" else nonce
        request = token_request(
            "userrecaptcha", "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-", "https://example.test/"
        )
        now = time.time()
        store.record_submission(
            NewTask(task_id, request, now, now + 120, nonce=proven, owner=owner)
        )

    def dead_letter_event(self) -> dict[str, Any]:
        """What the queue's event source mapping would hand ReplayFunction: the dead letters
        now waiting, as SQS records."""
        received = self.stack["sqs"].receive_message(
            QueueUrl=self.stack["dlq"], MaxNumberOfMessages=10, AttributeNames=["All"]
        )
        template = event("sqs_receive_message.json")["Records"][0]
        records = []
        for message in received.get("Messages", []):
            record = copy.deepcopy(template)
            record.update(
                messageId=message["MessageId"],
                receiptHandle=message["ReceiptHandle"],
                body=message["Body"],
            )
            records.append(record)
        return {"Records": records}

    def output(self) -> str:
        """What the handlers printed (logs, EMF metrics) since the last look."""
        return self.capsys.readouterr().out

    def metrics(self) -> dict[str, float]:
        return emitted_metrics(self.output())
