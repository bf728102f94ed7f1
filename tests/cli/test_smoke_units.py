"""`pingback-guard smoke` without a stack: every failure is one line, and cleanup deletes what was
made whatever failed (AWS and the API stubbed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from pingback_guard_cli import smoke
from pingback_guard_cli.stack import Stack

STACK = Stack(
    "pg",
    {"EventBusName": "pg-results", "ApiUrl": "https://api.example.test"},
    {"AdminPrincipalArn": "arn:aws:iam::123456789012:role/operator"},
)
TASK = "91234567890123456789"
PINGBACK = (
    "https://api.example.test/callback/v2.AAAAAAAAAAAAAAAAAAAAAA.1764000000.QUJDREVGR0hJSktMTU5PUA"
)


class FakeClients:
    """sqs, events and cloudwatch as the run uses them; `fail` names operations that raise."""

    def __init__(self, fail: set[str], event_detail: dict[str, str] | None) -> None:
        self.fail = fail
        self.calls: list[str] = []
        self.event_detail = event_detail

    def client(self, service: str) -> FakeClients:
        return self

    def __getattr__(self, operation: str) -> Any:
        def call(*_args: Any, **_request: Any) -> Any:
            self.calls.append(operation)
            if operation in self.fail:
                raise ClientError({"Error": {"Code": "AccessDenied"}}, operation)
            return self._answer(operation)

        return call

    def _answer(self, operation: str) -> Any:
        if operation == "create_queue":
            return {"QueueUrl": "https://sqs.test/123456789012/pg-smoke"}
        if operation == "get_queue_attributes":
            return {"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:123456789012:pg-smoke"}}
        if operation == "put_rule":
            return {"RuleArn": "arn:aws:events:us-east-1:123456789012:rule/pg-results/pg-smoke"}
        if operation == "receive_message":
            if self.event_detail is None:
                return {}
            return {"Messages": [{"Body": json.dumps({"detail": self.event_detail})}]}
        if operation == "get_paginator":
            return self
        if operation == "paginate":
            alarm = {"AlarmName": "pg-dlq-depth", "StateValue": "OK"}
            return [{"MetricAlarms": [alarm]}]
        return {}


class FakeApi:
    def __init__(self, fail_delete: bool = False, solution: str | None = None) -> None:
        self.deleted: list[str] = []
        self.fail_delete = fail_delete
        self.solution = solution

    def create_smoke_task(self) -> tuple[str, str]:
        return TASK, PINGBACK

    def get_task(self, task_id: str) -> dict[str, Any]:
        return {"status": "SOLVED", "delivered_via": "callback", "solution": self.solution}

    def delete_smoke_task(self, task_id: str) -> None:
        if self.fail_delete:
            raise smoke.StepFailed(f"DELETE /smoke-tasks/{task_id} got 503: unavailable")
        self.deleted.append(task_id)


def run(
    monkeypatch: pytest.MonkeyPatch,
    clients: FakeClients,
    api: FakeApi,
    pingback_statuses: tuple[int, int] = (403, 200),
) -> smoke.Report:
    sent: list[str] = []

    def pingback(url: str, task_id: str, token: str) -> int:
        sent.append(token)
        if api.solution is None:
            api.solution = token
        return pingback_statuses[len(sent) - 1]

    monkeypatch.setattr(smoke, "_Api", lambda aws, url: api)
    monkeypatch.setattr(smoke, "_pingback", pingback)
    clock = iter(range(0, 1000, 10))
    options = smoke.SmokeOptions("https://api.example.test", event_timeout_seconds=30)
    return smoke.run_smoke(
        clients,  # type: ignore[arg-type]
        STACK,
        options,
        sleep=lambda _seconds: None,
        clock=lambda: float(next(clock)),
    )


def verdicts(report: smoke.Report) -> dict[str, bool]:
    return {step.name: step.ok for step in report.steps}


SMOKE_EVENT = {"task_id": TASK, "status": "SOLVED", "origin": "smoke"}


def test_every_step_passes_and_cleanup_removes_the_rule_before_the_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clients, api = FakeClients(set(), SMOKE_EVENT), FakeApi()
    report = run(monkeypatch, clients, api)
    assert report.ok, report.steps
    assert api.deleted == [TASK]
    assert clients.calls.index("remove_targets") < clients.calls.index("delete_rule")
    assert clients.calls.index("delete_rule") < clients.calls.index("delete_queue")
    assert report.alarms == [("pg-dlq-depth", "OK")]


def test_a_forgery_that_is_accepted_fails_its_step_stops_the_proof_and_still_cleans_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clients, api = FakeClients(set(), SMOKE_EVENT), FakeApi()
    report = run(monkeypatch, clients, api, pingback_statuses=(200, 200))
    found = verdicts(report)
    assert found["forged pingback refused"] is False
    assert "pingback stored" not in found
    assert found["alarms listed"] is True
    assert [
        found[f"clean up: {part}"] for part in ("synthetic task", "result bus rule", "queue")
    ] == [
        True,
        True,
        True,
    ]
    failed = next(step for step in report.steps if not step.ok)
    assert failed.detail == "a pingback with a forged capability got 200, not 403"


def test_no_event_within_the_timeout_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    report = run(monkeypatch, FakeClients(set(), None), FakeApi())
    failed = [step for step in report.steps if not step.ok]
    assert [step.name for step in failed] == ["result event on the bus"]
    assert "no result event for task" in failed[0].detail and "30 s" in failed[0].detail


def test_a_cleanup_that_fails_is_its_own_line_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clients, api = FakeClients({"delete_rule"}, SMOKE_EVENT), FakeApi(fail_delete=True)
    report = run(monkeypatch, clients, api)
    found = verdicts(report)
    assert found["clean up: synthetic task"] is False
    assert found["clean up: result bus rule"] is False
    assert found["clean up: queue"] is True
    assert "delete_queue" in clients.calls
    rule_line = next(step for step in report.steps if step.name == "clean up: result bus rule")
    assert (
        rule_line.detail
        == "missing permission: delete_rule was denied for your AWS identity (AccessDenied)"
    )
    assert not report.ok


def test_a_rule_that_cannot_get_its_target_is_still_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clients = FakeClients({"put_targets"}, SMOKE_EVENT)
    report = run(monkeypatch, clients, FakeApi())
    found = verdicts(report)
    assert found["result bus rule"] is False and "synthetic task" not in found
    assert "remove_targets" not in clients.calls and "delete_rule" in clients.calls
    assert found["clean up: queue"] is True


def test_a_stack_without_an_admin_principal_creates_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clients = FakeClients(set(), SMOKE_EVENT)
    stack = Stack("pg", STACK.outputs, {"AdminPrincipalArn": ""})
    monkeypatch.setattr(smoke, "_Api", lambda aws, url: FakeApi())
    report = smoke.run_smoke(
        clients,  # type: ignore[arg-type]
        stack,
        smoke.SmokeOptions("https://api.example.test"),
        sleep=lambda _seconds: None,
    )
    assert [step.name for step in report.steps] == ["admin principal", "alarms listed"]
    assert "AdminPrincipalArn" in report.steps[0].detail
    assert "create_queue" not in clients.calls and "put_rule" not in clients.calls


def test_the_forged_url_is_well_formed_and_differs_only_in_its_mac() -> None:
    forged = smoke._forged(PINGBACK)
    assert forged != PINGBACK and len(forged) == len(PINGBACK)
    assert forged.rsplit(".", 1)[0] == PINGBACK.rsplit(".", 1)[0]
