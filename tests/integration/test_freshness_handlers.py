"""GetTaskFunction's read-through and ReportFunction, with real-shaped events, against moto."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from infra.lambda_context import FakeLambdaContext
from pingback_guard.logic.accounts import ProviderAccounts
from tests.fakes import FakeProvider
from tests.integration.handler_support import (
    TOKEN,
    Handlers,
    callback_get,
    emitted_metrics,
    event,
    with_principal,
)

TASK = "70000000001"


def get_event(task_id: str) -> dict[str, Any]:
    shaped = event("get_task.json")
    shaped["pathParameters"] = {"task_id": task_id}
    return shaped


def report_event(task_id: str, body: str) -> dict[str, Any]:
    shaped = event("report_task.json")
    shaped["pathParameters"] = {"task_id": task_id}
    shaped["body"] = body
    shaped["isBase64Encoded"] = False
    return shaped


def submit_overdue(handlers: Handlers, provider: FakeProvider) -> None:
    """A PENDING task submitted a minute ago: its likely-ready first poll time has passed."""
    submit = handlers.load("submit")
    handlers.monkeypatch.setattr(submit.service, "_accounts", ProviderAccounts.single(provider))
    a_minute_ago = replace(submit.service.pending, clock=lambda: time.time() - 60)
    handlers.monkeypatch.setattr(submit.service, "pending", a_minute_ago)
    answer = submit.handler(event("submit_task.json"), FakeLambdaContext())
    assert json.loads(answer["body"])["task_id"] == TASK


class TestReadThrough:
    def test_an_overdue_task_is_checked_and_its_token_stored_by_read_through(
        self, handlers: Handlers
    ) -> None:
        provider = FakeProvider(answers={TASK: TOKEN})
        submit_overdue(handlers, provider)
        get_task = handlers.load("get_task")
        handlers.monkeypatch.setattr(get_task.query, "_accounts", ProviderAccounts.single(provider))
        answer = get_task.handler(get_event(TASK), FakeLambdaContext())
        view = json.loads(answer["body"])
        assert answer["statusCode"] == 200
        assert (view["status"], view["solution"], view["delivered_via"]) == (
            "SOLVED",
            TOKEN,
            "read_through",
        )
        assert view["usable"] is True
        assert view["finished_at_earliest"] == view["submitted_at"]
        assert view["usable_until"] == pytest.approx(view["submitted_at"] + 120)
        stored = handlers.item(TASK)
        assert stored is not None and stored["delivered_via"]["S"] == "read_through"
        assert {"finished_after", "usable_until", "token_lifetime_seconds", "read_through_at"} <= (
            set(stored)
        )
        output = handlers.output()
        metrics = emitted_metrics(output)
        assert metrics["ReadThroughRecovered"] == 1 and "TokenAgeAtDelivery" in metrics
        assert TOKEN not in output.replace(answer["body"], "")

    def test_a_second_get_within_the_interval_does_not_ask_again(self, handlers: Handlers) -> None:
        provider = FakeProvider()
        submit_overdue(handlers, provider)
        get_task = handlers.load("get_task")
        handlers.monkeypatch.setattr(get_task.query, "_accounts", ProviderAccounts.single(provider))
        for _ in range(3):
            answer = get_task.handler(get_event(TASK), FakeLambdaContext())
            assert json.loads(answer["body"])["status"] == "PENDING"
        assert provider.requests == [[TASK]]
        stored = handlers.item(TASK)
        assert stored is not None and "last_checked_at" in stored

    def test_an_unreachable_provider_still_answers_the_pending_view(
        self, handlers: Handlers
    ) -> None:
        submit_overdue(handlers, FakeProvider())
        get_task = handlers.load("get_task")
        # The provider client is made at the first read-through: made here to point it away.
        provider = get_task.query._accounts.primary._client()
        handlers.monkeypatch.setattr(provider, "_base_url", "http://127.0.0.1:9")
        answer = get_task.handler(get_event(TASK), FakeLambdaContext())
        assert answer["statusCode"] == 200
        assert json.loads(answer["body"])["status"] == "PENDING"
        assert handlers.metrics()["ReadThroughError"] == 1

    def test_a_pingback_delivery_is_measured_by_path(self, handlers: Handlers) -> None:
        handlers.register("901")
        handlers.load("callback").handler(callback_get("901", TOKEN), FakeLambdaContext())
        documents = [
            json.loads(line) for line in handlers.output().splitlines() if '"_aws"' in line
        ]
        (age,) = [d for d in documents if "TokenAgeAtDelivery" in d]
        assert age["delivery_path"] == "callback" and age["service"] == "pingback-guard"
        (seconds,) = age["TokenAgeAtDelivery"]
        assert 0 <= seconds < 5
        assert not any("TokenDeliveredUnusable" in d for d in documents)
        assert all("delivery_path" not in d for d in documents if "CallbackAccepted" in d)


class TestReport:
    def solved(self, handlers: Handlers) -> None:
        handlers.register(TASK)
        handlers.load("callback").handler(callback_get(TASK, TOKEN), FakeLambdaContext())

    def test_a_bad_token_is_reported_once(self, handlers: Handlers) -> None:
        self.solved(handlers)
        report = handlers.load("report")
        provider = FakeProvider()
        handlers.monkeypatch.setattr(report.service, "_accounts", ProviderAccounts.single(provider))
        answer = report.handler(report_event(TASK, '{"correct": false}'), FakeLambdaContext())
        assert (answer["statusCode"], json.loads(answer["body"])) == (
            200,
            {"task_id": TASK, "reported": "bad"},
        )
        again = report.handler(report_event(TASK, '{"correct": true}'), FakeLambdaContext())
        assert (again["statusCode"], json.loads(again["body"])["error"]) == (
            409,
            "already_reported",
        )
        assert provider.reports == [(TASK, False)]
        stored = handlers.item(TASK)
        assert stored is not None and stored["reported"]["S"] == "bad"
        assert "report_lease_until" not in stored
        view = json.loads(
            handlers.load("get_task").handler(get_event(TASK), FakeLambdaContext())["body"]
        )
        assert view["reported"] == "bad"

    def test_another_principals_task_is_unknown_and_nothing_is_sent(
        self, handlers: Handlers
    ) -> None:
        self.solved(handlers)
        report = handlers.load("report")
        provider = FakeProvider()
        handlers.monkeypatch.setattr(report.service, "_accounts", ProviderAccounts.single(provider))
        foreign = with_principal(
            report_event(TASK, '{"correct": false}'), "arn:aws:iam::123456789012:user/other"
        )
        answer = report.handler(foreign, FakeLambdaContext())
        assert (answer["statusCode"], json.loads(answer["body"])["error"]) == (
            404,
            "unknown_task",
        )
        assert provider.reports == []
        stored = handlers.item(TASK)
        assert stored is not None and "reported" not in stored
        unsigned = with_principal(report_event(TASK, '{"correct": false}'), None)
        assert report.handler(unsigned, FakeLambdaContext())["statusCode"] == 403

    @pytest.mark.parametrize(
        ("task_id", "status", "error"),
        [("79999999999", 404, "unknown_task"), ("70000000002", 409, "not_solved")],
    )
    def test_unknown_and_unsolved(
        self,
        handlers: Handlers,
        task_id: str,
        status: int,
        error: str,
    ) -> None:
        submit = handlers.load("submit")
        handlers.monkeypatch.setattr(
            submit.service,
            "_accounts",
            ProviderAccounts.single(FakeProvider(next_task_id=70000000002)),
        )
        submit.handler(event("submit_task.json"), FakeLambdaContext())
        report = handlers.load("report")
        provider = FakeProvider()
        handlers.monkeypatch.setattr(report.service, "_accounts", ProviderAccounts.single(provider))
        answer = report.handler(report_event(task_id, '{"correct": true}'), FakeLambdaContext())
        refusal = json.loads(answer["body"])
        assert (answer["statusCode"], refusal["error"]) == (status, error) and refusal["reason"]
        assert provider.reports == []
        assert handlers.item("79999999999") is None

    @pytest.mark.parametrize(
        ("task_id", "body"),
        [
            (TASK, ""),
            (TASK, "{"),
            (TASK, "[]"),
            (TASK, '{"correct": "yes"}'),
            (TASK, '{"correct": true, "why": "x"}'),
            ("12ab", '{"correct": true}'),
            ("", '{"correct": true}'),
        ],
    )
    def test_bad_input_is_400_with_a_reason_and_changes_nothing(
        self,
        handlers: Handlers,
        task_id: str,
        body: str,
    ) -> None:
        self.solved(handlers)
        before = handlers.item(TASK)
        report = handlers.load("report")
        provider = FakeProvider()
        handlers.monkeypatch.setattr(report.service, "_accounts", ProviderAccounts.single(provider))
        answer = report.handler(report_event(task_id, body), FakeLambdaContext())
        document = json.loads(answer["body"])
        assert answer["statusCode"] == 400
        assert document["error"] in {"invalid_body", "invalid_field", "invalid_task_id"}
        assert document["reason"]
        assert body not in document["reason"] or not body
        assert handlers.item(TASK) == before and provider.reports == []

    def test_an_unreachable_provider_leaves_nothing_claimed(self, handlers: Handlers) -> None:
        self.solved(handlers)
        report = handlers.load("report")
        handlers.monkeypatch.setattr(
            report.service._accounts.primary, "_base_url", "http://127.0.0.1:9"
        )
        handlers.monkeypatch.setattr(report.service._accounts.primary, "_sleep", lambda _: None)
        answer = report.handler(report_event(TASK, '{"correct": false}'), FakeLambdaContext())
        assert answer["statusCode"] == 503
        assert json.loads(answer["body"])["error"] == "provider_unavailable"
        stored = handlers.item(TASK)
        assert stored is not None and "reported" not in stored
        assert handlers.metrics()["ReportFailed"] == 1
