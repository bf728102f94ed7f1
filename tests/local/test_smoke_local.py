"""`pingback-guard smoke` against the local stack: the project template against the simulator,
proving itself without one provider request, and leaving nothing behind."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from infra.local import LocalStack
from infra.local.events.event_bus import RUN_TIME_RULES_REFRESH_SECONDS
from infra.local.runtime.aws import OTHER_WORKER, WORKER, LocalPrincipal
from infra.simulator import Simulator
from pingback_guard_cli.errors import ExitCode
from pingback_guard_cli.main import run
from tests.local.support import QUICK_SOLVES

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

SIMULATOR = {**QUICK_SOLVES, "seed": 27}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 60,  # the poller every second: it must still never see the smoke task
    "parameter_overrides": {"AdminPrincipalArn": WORKER.user_arn},
    "workers_per_function": 1,
}
ALL_STEPS = [
    "admin principal",
    "result bus rule",
    "synthetic task",
    "forged pingback refused",
    "pingback stored",
    "result read back",
    "result event on the bus",
    "alarms listed",
    "clean up: synthetic task",
    "clean up: result bus rule",
    "clean up: queue",
]


# The local bus reads run-time rules again once a second, as EventBridge matches a new rule only
# a short while after PutRule.
RULE_SETTLE = str(RUN_TIME_RULES_REFRESH_SECONDS)


def smoke(
    stack: LocalStack, capsys: pytest.CaptureFixture[str], principal: LocalPrincipal
) -> tuple[int, dict[str, Any], str]:
    ready = stack.ready
    session = boto3.Session(
        aws_access_key_id=principal.access_key,
        aws_secret_access_key=principal.secret_key,
        aws_session_token=principal.session_token,
        region_name=ready.region,
    )
    code = run(
        [
            *("--endpoint-url", ready.aws_endpoint_url, "--stack-name", ready.stack_name),
            *("smoke", "--api-url", ready.api_url, "--rule-settle-seconds", RULE_SETTLE, "--json"),
        ],
        session=session,
    )
    out = capsys.readouterr().out
    return code, json.loads(out), out


def leftovers(stack: LocalStack) -> dict[str, list[str]]:
    """Smoke items, rules and queues still there (the table: by scan, small here)."""
    aws = stack.ready.aws_client
    bus = stack.ready.outputs["EventBusName"]
    items = aws("dynamodb").scan(TableName=stack.ready.tasks_table)["Items"]
    rules = aws("events").list_rules(EventBusName=bus)["Rules"]
    queues = aws("sqs").list_queues().get("QueueUrls", [])
    return {
        "tasks": [i["task_id"]["S"] for i in items if i.get("origin", {}).get("S") == "smoke"],
        "rules": [r["Name"] for r in rules if "-smoke-" in r["Name"]],
        "queues": [url for url in queues if "-smoke-" in url],
    }


def test_the_stack_proves_itself_without_the_provider_and_leaves_nothing(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found, out = smoke(stack, capsys, WORKER)

    assert code == ExitCode.OK, found
    assert [step["step"] for step in found["steps"]] == ALL_STEPS
    assert all(step["ok"] for step in found["steps"]), found["steps"]
    assert found["ok"] is True
    assert {alarm["state"] for alarm in found["alarms"]} <= {"OK", "ALARM", "INSUFFICIENT_DATA"}
    assert len(found["alarms"]) > 10
    # The result went through the pipe and the bus marked as a smoke result ...
    smoke_events = [e for e in stack.published_events() if e["detail"]["origin"] == "smoke"]
    assert [e["detail"]["status"] for e in smoke_events] == ["SOLVED"]
    (task_id,) = {e["detail"]["task_id"] for e in smoke_events}
    assert len(task_id) == 20 and task_id.startswith("9")
    # ... nothing asked the provider, nothing is left, and no token or URL was printed
    stats = simulator.stats()
    assert (stats["in"]["requests"], stats["res"]["requests"]) == (0, 0)
    assert leftovers(stack) == {"tasks": [], "rules": [], "queues": []}
    assert "smoke-" not in out.replace(f"{stack.ready.stack_name}-smoke-", "")
    assert "/callback/" not in out


def test_another_principal_gets_a_clear_failure_and_the_rule_is_cleaned_up(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found, _ = smoke(stack, capsys, OTHER_WORKER)

    assert code == ExitCode.FAILED
    verdicts = {step["step"]: step["ok"] for step in found["steps"]}
    assert verdicts["synthetic task"] is False
    failed = next(step for step in found["steps"] if step["step"] == "synthetic task")
    assert "403" in failed["detail"] and "AdminPrincipalArn" in failed["detail"]
    assert "pingback stored" not in verdicts
    assert verdicts["alarms listed"] is True
    assert verdicts["clean up: result bus rule"] is True and verdicts["clean up: queue"] is True
    assert "clean up: synthetic task" not in verdicts
    assert leftovers(stack)["rules"] == [] and leftovers(stack)["queues"] == []
