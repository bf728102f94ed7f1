"""The operator CLI against the local stack (the project template deployed into moto)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra.local import FaultRule, LocalOptions, LocalStack
from infra.local.runtime.aws import FAKE_CREDENTIALS
from pingback_guard.domain.task import DeliveryPath, TaskResult
from pingback_guard.queue.dead_letter import encode_message
from pingback_guard_cli.errors import ExitCode
from pingback_guard_cli.main import run
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "03AGdBq2-operator-cli-token-" + "x" * 40


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalOptions(
        template=PROJECT_ROOT / "template.yaml",
        provider_url="http://127.0.0.1:9",  # no provider: these tests never submit
        provider_api_key="operator-cli-test-key",
        time_scale=60,  # DLQ visibility 3 s; the poller once a minute (PollRateMinutes 60)
        parameter_overrides={"PollRateMinutes": "60", "MaxReceiveCount": "1000"},
        workers_per_function=1,
        run_dir=tmp_path_factory.mktemp("operator-cli"),
        stack_name="pg-operator-cli",
    )
    with LocalStack(options) as running:
        yield running


def session(region: str) -> boto3.Session:
    return boto3.Session(
        aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
        region_name=region,
    )


def cli(
    stack: LocalStack,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    with_session: boto3.Session | None = None,
) -> tuple[int, str, str]:
    ready = stack.ready
    base = ["--endpoint-url", ready.aws_endpoint_url, "--stack-name", ready.stack_name]
    code = run([*base, *args], session=with_session or session(ready.region))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def put_task(stack: LocalStack, **attributes: Any) -> str:
    task_id = str(uuid.uuid4().int)[:12]
    table = stack.ready.aws_client("dynamodb")
    item = {"task_id": task_id, "submitted_at": time.time() - 30, **attributes}
    serialised = {
        name: ({"N": repr(value)} if isinstance(value, float | int) else {"S": str(value)})
        for name, value in item.items()
    }
    table.put_item(TableName=stack.ready.tasks_table, Item=serialised)
    return task_id


def visible_and_in_flight(stack: LocalStack, url: str | None) -> tuple[int, int]:
    attributes = stack.ready.aws_client("sqs").get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


def queue_messages(stack: LocalStack, url: str | None) -> int:
    return sum(visible_and_in_flight(stack, url))


def in_flight(stack: LocalStack, url: str | None) -> int:
    return visible_and_in_flight(stack, url)[1]


def test_status_counts_pending_and_due_tasks_from_the_index_and_lists_alarms(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(stack, capsys, "status", "--json")
    before = json.loads(out)
    assert code == ExitCode.OK and before["alarms_in_alarm"] == [] and before["healthy"]
    now = time.time()
    for shard in ("0", "3"):
        put_task(stack, status="PENDING", due_shard=shard, due_at=now - 5)
    put_task(stack, status="PENDING", due_shard="5", due_at=now + 600)
    put_task(stack, status="SOLVED", solution=TOKEN)
    # A parked message: the local alarm evaluation puts the parking alarm into ALARM (a state set by
    # hand would be evaluated back to OK within a scaled period).
    alarm = f"{stack.ready.stack_name}-parking-queue-messages"
    stack.ready.aws_client("sqs").send_message(
        QueueUrl=stack.ready.parking_queue_url, MessageBody='{"kind": "test"}'
    )
    try:
        check_status_while_parked(stack, capsys, before, alarm)
    finally:
        purge_queue(stack, stack.ready.parking_queue_url)
    calls = stack.calls_report()["counts"]
    assert not [c for c in calls if c["operation"] == "Scan"]


def check_status_while_parked(
    stack: LocalStack, capsys: pytest.CaptureFixture[str], before: dict[str, Any], alarm: str
) -> None:
    def alarmed() -> dict[str, Any] | None:
        code, out, _ = cli(stack, capsys, "status", "--json")
        found: dict[str, Any] = json.loads(out)
        assert code == (ExitCode.OK if found["healthy"] else ExitCode.NEEDS_ATTENTION)
        return found if found["alarms_in_alarm"] == [alarm] else None

    after = wait_until(alarmed, timeout=30, interval=0.5)
    assert (after["pending"] - before["pending"], after["due"] - before["due"]) == (3, 2)
    assert after["alarms_in_alarm"] == [alarm] and after["healthy"] is False
    assert f"alarm {alarm} is in ALARM" in after["attention"]
    assert "1 message(s) waiting in the parking queue" in after["attention"]
    # moto keeps no metrics: the figures it cannot give are null, and a note says why.
    assert after["last_hour"] == {"recovered": None, "expired": None, "conflict": None, "503": None}
    assert any("keeps no AWS/SQS metrics" in note for note in after["notes"])
    assert [q["name"] for q in after["queues"]] == ["dead-letter", "parking"]

    # The local alarm evaluation runs on its own clock: under load it may flip between two calls,
    # so the table is read until it shows the same alarm the JSON did.
    def table_alarmed() -> str | None:
        code, table, _ = cli(stack, capsys, "status")
        return table if code == ExitCode.NEEDS_ATTENTION and alarm in table else None

    table = wait_until(table_alarmed, timeout=30, interval=0.5)
    assert "needs attention" in table and "due now" in table
    assert "no data" in table and "moto" in table


def purge_queue(stack: LocalStack, url: str | None) -> None:
    sqs = stack.ready.aws_client("sqs")
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for message in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def test_task_show_hides_the_token_unless_asked(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    task_id = put_task(stack, status="SOLVED", solution=TOKEN, delivered_via="poll")
    code, out, _ = cli(stack, capsys, "task", "show", task_id)
    assert code == 0 and "SOLVED" in out and "poll" in out and TOKEN not in out
    assert f"hidden, {len(TOKEN)} characters" in out
    code, out, _ = cli(stack, capsys, "task", "show", task_id, "--show-token")
    assert code == 0 and f"\nsolution: {TOKEN}\n" in out  # whole, on its own line
    assert "ago)" in out  # submitted_at, as a readable relative time
    code, out, _ = cli(stack, capsys, "task", "show", task_id, "--json")
    shown = json.loads(out)
    assert shown["status"] == "SOLVED" and TOKEN not in out
    code, out, _ = cli(stack, capsys, "task", "show", task_id, "--json", "--show-token")
    assert json.loads(out)["solution"] == TOKEN
    code, _, err = cli(stack, capsys, "task", "show", "404404404")
    assert code == ExitCode.NOT_FOUND and "no task 404404404" in err


def test_dlq_peek_shows_messages_without_their_token_and_leaves_them(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replay's only worker hangs on its write with a first message (in flight, as on AWS, for
    # as long as the invocation runs), so a second one waits in the queue meanwhile.
    stack.set_faults(
        [FaultRule(mode="delay", function="ReplayFunction", service="dynamodb", delay_seconds=60)]
    )
    try:
        # Well-formed results, so replay reaches the table (a malformed one fails at once).
        sqs = stack.ready.aws_client("sqs")

        def dead_letter(task_id: str) -> None:
            result = TaskResult(task_id, TOKEN, DeliveryPath.CALLBACK, time.time())
            message = encode_message(result, "test")
            sqs.send_message(QueueUrl=stack.ready.dlq_url, MessageBody=message)

        dead_letter("31336")
        wait_until(lambda: in_flight(stack, stack.ready.dlq_url) >= 1, timeout=30)
        dead_letter("31337")

        def peeked() -> str:
            code, out, _ = cli(stack, capsys, "dlq", "peek")
            assert code == 0
            return out if "31337" in out else ""

        out = wait_until(peeked, timeout=30, interval=0.5)
        assert "result" in out and TOKEN not in out
        assert "This peek added 1 to the receive count" in " ".join(out.split())
        assert queue_messages(stack, stack.ready.dlq_url) >= 1
        # A message someone else holds is in flight: counted, never shown.
        wait_until(
            lambda: sqs.receive_message(QueueUrl=stack.ready.dlq_url, VisibilityTimeout=60).get(
                "Messages"
            ),
            timeout=30,
        )
        code, out, _ = cli(stack, capsys, "dlq", "peek", "--json")
        peeked_json = json.loads(out)
        assert code == 0 and peeked_json["queue"] == "dead-letter"
        assert peeked_json["in_flight"] >= 1 and peeked_json["max_receive_count"] == 1000
        assert "31337" not in [m["task_id"] for m in peeked_json["messages"]]
    finally:
        stack.set_faults([])


def test_parking_redrive_moves_messages_back_by_hand_on_moto(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = stack.ready.aws_client("sqs")
    parking = stack.ready.parking_queue_url
    for task_id in ("111", "222"):
        body = {"kind": "result", "task_id": task_id, "code": TOKEN, "reason": "parked"}
        sqs.send_message(QueueUrl=parking, MessageBody=json.dumps(body))
    code, out, _ = cli(stack, capsys, "parking", "peek")
    assert code == 0 and "111" in out and "222" in out and TOKEN not in out
    code, out, _ = cli(stack, capsys, "parking", "redrive")
    assert code == 0
    assert "no StartMessageMoveTask" in out and "moved 2 message(s)" in out
    assert queue_messages(stack, parking) == 0


def test_parking_purge_asks_first(
    stack: LocalStack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    parking = stack.ready.parking_queue_url
    stack.ready.aws_client("sqs").send_message(QueueUrl=parking, MessageBody="{}")
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    code, _, err = cli(stack, capsys, "parking", "purge")
    assert code == ExitCode.FAILED and "aborted" in err
    assert queue_messages(stack, parking) == 1
    code, out, _ = cli(stack, capsys, "parking", "purge", "--yes")
    assert code == 0 and "purged" in out
    wait_until(lambda: queue_messages(stack, parking) == 0, timeout=10)


def test_secret_rotate_keeps_the_old_secret_as_previous_and_prints_neither(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = stack.ready.aws_client("secretsmanager")
    arn = stack.ready.outputs["CallbackSecretArn"]
    before = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    code, out, err = cli(stack, capsys, "secret", "rotate")
    after = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    assert code == 0 and "rotated" in out
    assert after["previous"] == before["current"] != after["current"]
    assert len(after["current"]) == 40
    assert before["current"] not in out + err and after["current"] not in out + err
    assert "RetentionSeconds + 60 s" in " ".join(out.split())


def test_secret_rotate_refuses_to_drop_a_previous_secret_and_retire_waits_for_the_rule(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = stack.ready.aws_client("secretsmanager")
    arn = stack.ready.outputs["CallbackSecretArn"]
    cli(stack, capsys, "secret", "rotate", "--force")
    held = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    # Given a previous secret still accepted, When rotating again, Then it is refused
    code, _, err = cli(stack, capsys, "secret", "rotate")
    assert code == ExitCode.FAILED and "refused" in err and "--force" in err
    assert "RetentionSeconds + 60 s" in err
    assert json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"]) == held
    # And retiring it before RetentionSeconds + 60 s is refused too
    code, _, err = cli(stack, capsys, "secret", "retire")
    assert code == ExitCode.FAILED and "too early" in err
    code, out, _ = cli(stack, capsys, "secret", "retire", "--force", "--json")
    assert code == 0 and json.loads(out) == {"retired": True}
    retired = json.loads(secrets.get_secret_value(SecretId=arn)["SecretString"])
    assert retired == {**held, "previous": ""}
    code, out, _ = cli(stack, capsys, "secret", "rotate", "--json")
    assert code == 0 and json.loads(out)["retire_after"] > time.time()


def test_a_missing_stack_is_exit_3(stack: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(stack, capsys, "--stack-name", "no-such-stack", "status")
    assert code == ExitCode.STACK_NOT_FOUND and "no stack named no-such-stack" in err


def test_a_denied_call_is_exit_5(stack: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    denied = session(stack.ready.region)

    def deny(**_: Any) -> tuple[Any, dict[str, Any]]:
        response = type("Denied", (), {"status_code": 403, "headers": {}})()
        error = {"Code": "AccessDeniedException", "Message": "not authorized"}
        return response, {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 403}}

    denied.events.register("before-call.sqs.GetQueueAttributes", deny)  # type: ignore[arg-type]
    code, _, err = cli(stack, capsys, "status", with_session=denied)
    assert code == ExitCode.ACCESS_DENIED
    assert "missing permission: GetQueueAttributes" in err


def test_an_unreachable_endpoint_is_exit_7(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(
        ["--endpoint-url", "http://127.0.0.1:9", "--stack-name", "x", "status"],
        session=session(stack.ready.region),
    )
    assert code == ExitCode.UNREACHABLE and "cannot reach" in capsys.readouterr().err


def test_the_console_script_without_credentials_is_exit_4(stack: LocalStack) -> None:
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(path for path in sys.path if path),
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_REGION": stack.ready.region,
    }
    command = [sys.executable, "-m", "pingback_guard_cli", "--endpoint-url"]
    done = subprocess.run(
        [*command, stack.ready.aws_endpoint_url, "--stack-name", stack.ready.stack_name, "status"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == ExitCode.NO_CREDENTIALS, done.stderr
    assert "no AWS credentials" in done.stderr
    help_text = subprocess.run(
        [sys.executable, "-m", "pingback_guard_cli", "--help"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert help_text.returncode == 0 and "parking" in help_text.stdout
