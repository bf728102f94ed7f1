"""Every handler branch, with real-shaped events (sam local generate-event + captured traffic),
against moto: table, queues, secret and parameter as the template declares them."""

from __future__ import annotations

import base64
import copy
import importlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from botocore.exceptions import EndpointConnectionError

from pingback_guard.domain.errors import ProviderRejectedError
from tests.fakes import FakeProvider
from tests.lambda_context import FakeLambdaContext
from tests.support import create_tasks_table

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


@pytest.fixture
def stack(aws: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_tasks_table(dynamodb, TABLE)
    sqs = boto3.client("sqs", region_name="us-east-1")
    parking = sqs.create_queue(QueueName="pg-parking")["QueueUrl"]
    parking_arn = sqs.get_queue_attributes(QueueUrl=parking, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    dlq = sqs.create_queue(
        QueueName="pg-dead-letter",
        Attributes={
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": parking_arn, "maxReceiveCount": "5"}
            )
        },
    )["QueueUrl"]
    secret_arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="pg-callback-secret",
        SecretString=json.dumps({"current": SECRET, "previous": PREVIOUS_SECRET}),
    )["ARN"]
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name="/pg/provider-api-key", Value=API_KEY, Type="SecureString"
    )
    env = {
        "TASKS_TABLE_NAME": TABLE,
        "DUE_INDEX_NAME": "DueIndex",
        "DUE_SHARDS": "4",
        "DEAD_LETTER_QUEUE_URL": dlq,
        "CALLBACK_SECRET_ID": secret_arn,
        "PROVIDER_API_KEY_PARAMETER": "/pg/provider-api-key",
        "PROVIDER_BASE_URL": "https://provider.invalid",
        "PINGBACK_VERIFICATION_TOKEN": "verify-me-123",
        "POLLER_DEADLINE_MARGIN_SECONDS": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    parameters.clear_caches()
    return {"dynamodb": dynamodb, "sqs": sqs, "dlq": dlq, "parking": parking}


@pytest.fixture
def load(stack: dict[str, Any]) -> Iterator[Callable[[str], ModuleType]]:
    loaded: list[str] = []

    def load_handler(name: str) -> ModuleType:
        module_name = f"pingback_guard.handlers.{name}"
        sys.modules.pop(module_name, None)
        loaded.append(module_name)
        return importlib.import_module(module_name)

    yield load_handler
    for module_name in loaded:
        sys.modules.pop(module_name, None)


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


class TestCallback:
    def test_captchaai_get_is_stored_before_200(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        answer = load("callback").handler(callback_get("73026473457", TOKEN), FakeLambdaContext())
        assert (answer["statusCode"], answer["body"]) == (200, "OK")
        stored = item(stack, "73026473457")
        assert stored is not None
        assert (stored["status"]["S"], stored["solution"]["S"], stored["delivered_via"]["S"]) == (
            "SOLVED",
            TOKEN,
            "callback",
        )
        output = capsys.readouterr().out
        assert emitted_metrics(output)["CallbackAccepted"] == 1
        assert TOKEN not in output and SECRET not in output

    def test_2captcha_form_post_from_captured_traffic(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        shaped = event("callback_post_form_2captcha.json")
        form = dict(
            pair.split("=", 1) for pair in base64.b64decode(shaped["body"]).decode().split("&")
        )
        answer = load("callback").handler(shaped, FakeLambdaContext())
        assert answer["statusCode"] == 200
        stored = item(stack, form["id"])
        assert stored is not None and stored["solution"]["S"] == form["code"]

    def test_json_post(self, load: Callable[[str], ModuleType], stack: dict[str, Any]) -> None:
        shaped = event("callback_post_form_2captcha.json")
        shaped["headers"]["content-type"] = "application/json"
        shaped["body"] = base64.b64encode(json.dumps({"id": 555, "code": TOKEN}).encode()).decode()
        assert load("callback").handler(shaped, FakeLambdaContext())["statusCode"] == 200
        assert item(stack, "555") is not None

    def test_previous_secret_still_works_during_rotation(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        answer = load("callback").handler(
            callback_get("601", TOKEN, PREVIOUS_SECRET), FakeLambdaContext()
        )
        assert answer["statusCode"] == 200

    @pytest.mark.parametrize(
        "secret", ["wrong-secret-wrong-secret-000", "", SECRET[:-1], SECRET + "x"]
    )
    def test_forged_callbacks_are_refused_and_store_nothing(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        secret: str,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        answer = load("callback").handler(callback_get("602", TOKEN, secret), FakeLambdaContext())
        assert answer["statusCode"] == 403
        assert item(stack, "602") is None
        assert emitted_metrics(capsys.readouterr().out)["CallbackRejected"] == 1

    def test_malformed_id_is_400(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        answer = load("callback").handler(callback_get("12ab", TOKEN), FakeLambdaContext())
        assert answer["statusCode"] == 400 and "task id" in answer["body"]

    def test_duplicate_is_200_and_counted(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        module = load("callback")
        module.handler(callback_get("603", TOKEN), FakeLambdaContext())
        assert module.handler(callback_get("603", TOKEN), FakeLambdaContext())["statusCode"] == 200
        assert (
            module.handler(callback_get("603", TOKEN + "X"), FakeLambdaContext())["statusCode"]
            == 200
        )
        metrics = emitted_metrics(capsys.readouterr().out)
        assert (
            metrics["CallbackAccepted"],
            metrics["CallbackDuplicate"],
            metrics["CallbackConflict"],
        ) == (1, 1, 1)
        stored = item(stack, "603")
        assert stored is not None and stored["solution"]["S"] == TOKEN

    def test_unsolvable_marks_failed(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        load("callback").handler(
            callback_get("604", "ERROR_CAPTCHA_UNSOLVABLE"), FakeLambdaContext()
        )
        stored = item(stack, "604")
        assert stored is not None and (stored["status"]["S"], stored["error"]["S"]) == (
            "FAILED",
            "ERROR_CAPTCHA_UNSOLVABLE",
        )

    def test_given_the_table_down_the_result_goes_to_the_dlq_and_the_answer_is_still_200(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        module = load("callback")
        fail_table_writes(module)
        answer = module.handler(callback_get("605", TOKEN), FakeLambdaContext())
        assert answer["statusCode"] == 200
        assert item(stack, "605") is None
        messages = stack["sqs"].receive_message(QueueUrl=stack["dlq"], MaxNumberOfMessages=10)[
            "Messages"
        ]
        assert [json.loads(m["Body"])["task_id"] for m in messages] == ["605"]
        output = capsys.readouterr().out
        assert emitted_metrics(output)["CallbackToDeadLetter"] == 1 and TOKEN not in output

    def test_given_table_and_dlq_down_the_answer_is_503(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        module = load("callback")
        fail_table_writes(module)
        module.service._dead_letters._client.meta.events.register(
            "before-send.sqs.SendMessage",
            lambda **_: (_ for _ in ()).throw(
                EndpointConnectionError(endpoint_url="https://sqs.test")
            ),
        )
        answer = module.handler(callback_get("606", TOKEN), FakeLambdaContext())
        assert answer["statusCode"] == 503
        assert emitted_metrics(capsys.readouterr().out)["CallbackUnavailable"] == 1

    def test_2captcha_domain_verification(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        answer = load("callback").handler(
            event("http_api_proxy.json") | {"routeKey": "GET /2captcha.txt"}, FakeLambdaContext()
        )
        assert (answer["statusCode"], answer["body"]) == (200, "verify-me-123")


class TestReplay:
    def sqs_event(self, stack: dict[str, Any]) -> dict[str, Any]:
        received = stack["sqs"].receive_message(
            QueueUrl=stack["dlq"], MaxNumberOfMessages=10, AttributeNames=["All"]
        )
        template = event("sqs_receive_message.json")["Records"][0]
        records = []
        for message in received["Messages"]:
            record = copy.deepcopy(template)
            record.update(
                messageId=message["MessageId"],
                receiptHandle=message["ReceiptHandle"],
                body=message["Body"],
            )
            records.append(record)
        return {"Records": records}

    def test_dead_lettered_result_is_replayed_and_a_bad_message_is_reported(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        callback = load("callback")
        fail_table_writes(callback)
        callback.handler(callback_get("701", TOKEN), FakeLambdaContext())
        stack["sqs"].send_message(QueueUrl=stack["dlq"], MessageBody="not json")
        replay_event = self.sqs_event(stack)
        answer = load("replay").handler(replay_event, FakeLambdaContext())
        bad = next(r["messageId"] for r in replay_event["Records"] if r["body"] == "not json")
        assert answer == {"batchItemFailures": [{"itemIdentifier": bad}]}
        stored = item(stack, "701")
        assert stored is not None and (stored["solution"]["S"], stored["delivered_via"]["S"]) == (
            TOKEN,
            "replay",
        )

    def test_replay_while_the_table_is_still_down_fails_the_record(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        callback = load("callback")
        fail_table_writes(callback)
        callback.handler(callback_get("702", TOKEN), FakeLambdaContext())
        replay = load("replay")
        fail_table_writes(replay)
        replay_event = self.sqs_event(stack)
        answer = replay.handler(replay_event, FakeLambdaContext())
        failed = [{"itemIdentifier": r["messageId"]} for r in replay_event["Records"]]
        assert answer == {"batchItemFailures": failed}


class TestPoller:
    def test_scheduled_sweep_recovers_a_missed_callback(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        submit = load("submit")
        fake = FakeProvider(answers={"70000000001": TOKEN})
        monkeypatch.setattr(submit.service, "_provider", fake)
        monkeypatch.setattr(submit.service, "_callback_timeout", 0)
        for _ in range(2):
            submit.handler(event("submit_task.json"), FakeLambdaContext())
        poller = load("poller")
        monkeypatch.setattr(poller.service, "_provider", fake)
        summary = poller.handler(event("scheduled_event.json"), FakeLambdaContext())
        assert (summary["due"], summary["recovered"], summary["not_ready"]) == (2, 1, 1)
        stored = item(stack, "70000000001")
        assert stored is not None and stored["delivered_via"]["S"] == "poll"
        assert emitted_metrics(capsys.readouterr().out)["PollRecovered"] == 1


class TestSubmit:
    def test_submit_records_pending_with_this_stacks_pingback_url(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        module = load("submit")
        fake = FakeProvider()
        monkeypatch.setattr(module.service, "_provider", fake)
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 202
        task_id = json.loads(answer["body"])["task_id"]
        assert fake.submitted == [
            (task_id, f"https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/callback/{SECRET}")
        ]
        stored = item(stack, task_id)
        assert stored is not None and stored["status"]["S"] == "PENDING" and "due_at" in stored

    def test_given_the_table_down_the_registration_goes_to_the_dlq_and_replays(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        module = load("submit")
        monkeypatch.setattr(module.service, "_provider", FakeProvider())
        monkeypatch.setattr(module.service, "_sleep", lambda _: None)
        fail_table_writes(module)
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 202
        task_id = json.loads(answer["body"])["task_id"]
        assert item(stack, task_id) is None
        load("replay").handler(TestReplay().sqs_event(stack), FakeLambdaContext())
        stored = item(stack, task_id)
        assert stored is not None and stored["status"]["S"] == "PENDING"

    def test_provider_rejection_is_422(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        module = load("submit")
        monkeypatch.setattr(
            module.service,
            "_provider",
            FakeProvider(failure=lambda: ProviderRejectedError("in.php: ERROR_PAGEURL")),
        )
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 422 and "ERROR_PAGEURL" in answer["body"]

    @pytest.mark.parametrize("body", ["{", "[]", json.dumps({"sitekey": "x"}), ""])
    def test_invalid_body_is_400(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any], body: str
    ) -> None:
        answer = load("submit").handler(
            event("submit_task.json") | {"body": body}, FakeLambdaContext()
        )
        assert answer["statusCode"] == 400

    def test_real_client_reads_the_key_from_ssm_and_unreachable_provider_is_503(
        self,
        load: Callable[[str], ModuleType],
        stack: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        module = load("submit")
        monkeypatch.setattr(module.service._provider, "_base_url", "http://127.0.0.1:9")
        monkeypatch.setattr(module.service._provider, "_sleep", lambda _: None)
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 503
        assert module.service._provider._api_key() == API_KEY


class TestGetTask:
    def test_view_of_a_solved_task(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any]
    ) -> None:
        load("callback").handler(callback_get("801", TOKEN), FakeLambdaContext())
        shaped = event("get_task.json")
        shaped["pathParameters"] = {"task_id": "801"}
        answer = load("get_task").handler(shaped, FakeLambdaContext())
        view = json.loads(answer["body"])
        assert answer["statusCode"] == 200
        assert (view["status"], view["solution"], view["delivered_via"]) == (
            "SOLVED",
            TOKEN,
            "callback",
        )
        assert view["token_age_seconds"] >= 0

    @pytest.mark.parametrize(("task_id", "status"), [("802", 404), ("abc", 400), ("", 400)])
    def test_unknown_and_malformed(
        self, load: Callable[[str], ModuleType], stack: dict[str, Any], task_id: str, status: int
    ) -> None:
        shaped = event("http_api_proxy.json")
        shaped["pathParameters"] = {"task_id": task_id}
        assert load("get_task").handler(shaped, FakeLambdaContext())["statusCode"] == status
