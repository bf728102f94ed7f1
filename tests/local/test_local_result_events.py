"""End to end on the project's template: results written to the table reach the example
consumer through the stream, the pipe and the bus, and each is applied exactly once although
every batch is published twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.local import LocalOptions, LocalStack
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.task import DeliveryPath, TaskResult
from pingback_guard.settings.table import TableSettings
from tests.fakes import TOKEN_LIFETIMES
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(240)]

PROJECT_TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
TOKEN = "03AFcWeA-local-token_" + "z" * 64
OWNER = "arn:aws:iam::123456789012:user/worker"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    options = LocalOptions(
        template=PROJECT_TEMPLATE,
        provider_api_key="local-test-key",
        run_dir=tmp_path_factory.mktemp("events-stack"),
        workers_per_function=1,
        time_scale=60,
        event_duplicate_rate=1.0,
        # The details under test carry tokens (off by default: docs/events.md).
        parameter_overrides={"PublishTokens": "true"},
    )
    with LocalStack(options) as started:
        yield started


def update(stack: LocalStack, task_id: str, **attributes: str | float) -> None:
    """One UpdateItem as the product writes them (attribute names of the team contract)."""
    names = {f"#{name}": name for name in attributes}
    values = {
        f":{name}": {"N": repr(value)} if isinstance(value, float) else {"S": value}
        for name, value in attributes.items()
    }
    stack.ready.aws_client("dynamodb").update_item(
        TableName=stack.ready.tasks_table,
        Key={"task_id": {"S": task_id}},
        UpdateExpression="SET " + ", ".join(f"#{name} = :{name}" for name in attributes),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )


def applied_counts(stack: LocalStack) -> dict[tuple[str, str], int]:
    dynamodb = stack.ready.aws_client("dynamodb")
    (table,) = [name for name in dynamodb.list_tables()["TableNames"] if "AppliedTable" in name]
    return {
        (item["task_id"]["S"], item["status"]["S"]): int(item["applied_count"]["N"])
        for item in dynamodb.scan(TableName=table)["Items"]
    }


def published(stack: LocalStack) -> list[dict[str, Any]]:
    return [event["detail"] for event in stack.published_events()]


def test_every_final_transition_is_published_and_applied_exactly_once(stack: LocalStack) -> None:
    # Given a read-through result with every contract attribute
    update(
        stack,
        "5001",
        status="PENDING",
        owner=OWNER,
        nonce="bm9uY2U",
        origin="submit",
        pingback_forward="yes",
        token_lifetime_seconds=120.0,
        submitted_at=990.0,
    )
    update(
        stack,
        "5001",
        status="SOLVED",
        solution=TOKEN,
        delivered_via="read_through",
        finished_after=1000.5,
        received_at=1004.25,
        usable_until=1120.5,
    )
    update(stack, "5001", reported="good", reported_at=1010.0)  # not a new result
    # ... an EXPIRED task a late poll solved, through the product's own store
    update(stack, "5002", status="PENDING", submitted_at=1990.0)
    store = DynamoDbTaskStore(
        stack.ready.aws_client("dynamodb"),
        TableSettings(stack.ready.tasks_table or "", "DueIndex", 8, 86400, TOKEN_LIFETIMES, 600),
    )
    assert store.mark_expired("5002", now=2000.0)
    store.record_result(TaskResult("5002", TOKEN, DeliveryPath.POLL, 2010.0))
    store.record_result(TaskResult("5002", TOKEN, DeliveryPath.READ_THROUGH, 2011.0))  # again
    # ... and a failure
    update(stack, "5003", status="PENDING", submitted_at=2990.0)
    store.record_failure(TaskResult("5003", "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.POLL, 3000.0))

    expected = {("5001", "SOLVED"), ("5002", "EXPIRED"), ("5002", "SOLVED"), ("5003", "FAILED")}
    wait_until(lambda: set(applied_counts(stack)) >= expected, timeout=60)
    wait_until(stack.result_events_settled, timeout=30)

    details = published(stack)
    assert {(d["task_id"], d["status"]) for d in details} == expected
    assert len(details) == 2 * len(expected)  # every batch was put twice (injected)
    assert applied_counts(stack) == dict.fromkeys(expected, 1)
    read_through = next(d for d in details if d["task_id"] == "5001")
    assert read_through == {
        "schema_version": "1",
        "task_id": "5001",
        "status": "SOLVED",
        "previous_status": "PENDING",
        "delivered_via": "read_through",
        "finished_at_earliest": "1000.5",
        "finished_at_latest": "1004.25",
        "usable_until": "1120.5",
        "error": "",
        "owner": OWNER,
        "origin": "submit",
        "pingback_forward": "yes",
        "solution": TOKEN,
    }
    late = next(d for d in details if d["task_id"] == "5002" and d["status"] == "SOLVED")
    assert (late["previous_status"], late["delivered_via"]) == ("EXPIRED", "poll")
    health = stack.health()
    assert health["event_bus"]["dropped"] == 0
    assert health["event_pipes"]["ResultEventsPipe"]["dead_lettered_batches"] == 0


def test_a_result_kept_for_an_unregistered_id_is_not_published(stack: LocalStack) -> None:
    # Given a pingback with a capability stored a result for an id nobody registered yet
    store = DynamoDbTaskStore(
        stack.ready.aws_client("dynamodb"),
        TableSettings(stack.ready.tasks_table or "", "DueIndex", 8, 86400, TOKEN_LIFETIMES, 600),
    )
    store.record_result(TaskResult("5010", TOKEN, DeliveryPath.CALLBACK, 4000.0, nonce="Zm9yZ2Vk"))
    # When a registered task's result follows it on the stream
    update(stack, "5011", status="PENDING", submitted_at=3990.0)
    update(stack, "5011", status="SOLVED", solution=TOKEN, delivered_via="callback")
    wait_until(lambda: ("5011", "SOLVED") in applied_counts(stack), timeout=60)
    wait_until(stack.result_events_settled, timeout=30)

    # Then only the registered one reached the bus
    assert "5010" not in {d["task_id"] for d in published(stack)}


def test_the_bus_is_an_output_and_no_event_reaches_a_log(stack: LocalStack) -> None:
    assert stack.ready.outputs["EventBusName"] == "pingback-guard-local-results"
    update(
        stack, "5009", status="SOLVED", solution=TOKEN, delivered_via="callback", submitted_at=1.0
    )
    wait_until(lambda: ("5009", "SOLVED") in applied_counts(stack), timeout=60)
    for log in Path(stack.ready.log_dir).glob("*.log"):
        assert TOKEN not in log.read_text(errors="replace"), log.name
