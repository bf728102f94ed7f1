"""Every handler branch, with real-shaped events (sam local generate-event + captured traffic),
against moto: table, queues, secret and parameter as the template declares them."""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import replace
from typing import Any, NoReturn

import pytest

from infra.lambda_context import FakeLambdaContext
from infra.local.cloudwatch.alarm_runtime import emf_datapoints
from infra.local.cloudwatch.alarms import MetricKey
from pingback_guard.domain.errors import ProviderRejectedError
from pingback_guard.domain.lease import PollerStart
from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.logic.accounts import ProviderAccounts
from tests.fakes import FakeProvider
from tests.integration.handler_support import (
    API_KEY,
    OWNER,
    PREVIOUS_SECRET,
    SECRET,
    TOKEN,
    Handlers,
    callback_get,
    capability_for,
    dead_letters_failing,
    emitted_metrics,
    event,
    table_writes_failing,
    with_principal,
)


class TestCallback:
    def test_captchaai_get_is_stored_before_200(self, handlers: Handlers) -> None:
        handlers.register("73026473457")
        answer = handlers.load("callback").handler(
            callback_get("73026473457", TOKEN), FakeLambdaContext()
        )
        assert (answer["statusCode"], answer["body"]) == (200, "OK")
        stored = handlers.item("73026473457")
        assert stored is not None
        assert (stored["status"]["S"], stored["solution"]["S"], stored["delivered_via"]["S"]) == (
            "SOLVED",
            TOKEN,
            "callback",
        )
        output = handlers.output()
        assert emitted_metrics(output)["CallbackAccepted"] == 1
        assert TOKEN not in output and SECRET not in output

    def test_an_answer_its_kind_does_not_expect_is_stored_200_flagged_counted_never_logged(
        self, handlers: Handlers
    ) -> None:
        """A reCAPTCHA task answered with words, Cyrillic, '/', ';' and ',': stored exactly,
        200, served flagged (answer_fits false), and counted by the alarmed metric."""
        misfit = "два слова / x; 3,14"
        handlers.register("605")
        answer = handlers.load("callback").handler(callback_get("605", misfit), FakeLambdaContext())
        assert (answer["statusCode"], answer["body"]) == (200, "OK")
        stored = handlers.item("605")
        assert stored is not None and stored["solution"]["S"] == misfit
        output = handlers.output()
        assert emitted_metrics(output)["AnswerShapeMisfit"] == 1
        assert misfit not in output
        shaped = event("get_task.json")
        shaped["pathParameters"] = {"task_id": "605"}
        view = json.loads(handlers.load("get_task").handler(shaped, FakeLambdaContext())["body"])
        assert (view["solution"], view["answer"], view["answer_fits"]) == (
            misfit,
            {"token": misfit},
            False,
        )

    def test_2captcha_form_post_from_captured_traffic(self, handlers: Handlers) -> None:
        shaped = event("callback_post_form_2captcha.json")
        form = dict(
            pair.split("=", 1) for pair in base64.b64decode(shaped["body"]).decode().split("&")
        )
        shaped["pathParameters"] = {"secret": capability_for(form["id"])}
        answer = handlers.load("callback").handler(shaped, FakeLambdaContext())
        assert answer["statusCode"] == 200
        stored = handlers.item(form["id"])
        assert stored is not None and stored["solution"]["S"] == form["code"]

    def test_json_post(self, handlers: Handlers) -> None:
        shaped = event("callback_post_form_2captcha.json")
        shaped["headers"]["content-type"] = "application/json"
        shaped["body"] = base64.b64encode(json.dumps({"id": 555, "code": TOKEN}).encode()).decode()
        shaped["pathParameters"] = {"secret": capability_for("555")}
        assert handlers.load("callback").handler(shaped, FakeLambdaContext())["statusCode"] == 200
        assert handlers.item("555") is not None

    def test_previous_secret_still_works_during_rotation(self, handlers: Handlers) -> None:
        handlers.register("601")
        answer = handlers.load("callback").handler(
            callback_get("601", TOKEN, capability_for("601", PREVIOUS_SECRET)), FakeLambdaContext()
        )
        assert answer["statusCode"] == 200

    @pytest.mark.parametrize(
        "secret", ["wrong-secret-wrong-secret-000", "", SECRET[:-1], SECRET + "x"]
    )
    def test_forged_callbacks_are_refused_and_store_nothing(
        self, handlers: Handlers, secret: str
    ) -> None:
        answer = handlers.load("callback").handler(
            callback_get("602", TOKEN, secret), FakeLambdaContext()
        )
        assert answer["statusCode"] == 403
        assert handlers.item("602") is None
        assert handlers.metrics()["CallbackRejected"] == 1

    def test_malformed_id_is_400(self, handlers: Handlers) -> None:
        answer = handlers.load("callback").handler(callback_get("12ab", TOKEN), FakeLambdaContext())
        assert answer["statusCode"] == 400 and "task id" in answer["body"]

    def test_duplicate_is_200_and_counted(self, handlers: Handlers) -> None:
        handlers.register("603")
        module = handlers.load("callback")
        module.handler(callback_get("603", TOKEN), FakeLambdaContext())
        assert module.handler(callback_get("603", TOKEN), FakeLambdaContext())["statusCode"] == 200
        assert (
            module.handler(callback_get("603", TOKEN + "X"), FakeLambdaContext())["statusCode"]
            == 200
        )
        metrics = handlers.metrics()
        assert (
            metrics["CallbackAccepted"],
            metrics["CallbackDuplicate"],
            metrics["CallbackConflict"],
        ) == (1, 1, 1)
        stored = handlers.item("603")
        assert stored is not None and stored["solution"]["S"] == TOKEN

    def test_unsolvable_marks_failed(self, handlers: Handlers) -> None:
        handlers.load("callback").handler(
            callback_get("604", "ERROR_CAPTCHA_UNSOLVABLE"), FakeLambdaContext()
        )
        stored = handlers.item("604")
        assert stored is not None and (stored["status"]["S"], stored["error"]["S"]) == (
            "FAILED",
            "ERROR_CAPTCHA_UNSOLVABLE",
        )

    def test_given_the_table_down_the_result_goes_to_the_dlq_and_the_answer_is_still_200(
        self, handlers: Handlers
    ) -> None:
        module = handlers.load("callback")
        with table_writes_failing():
            answer = module.handler(callback_get("605", TOKEN), FakeLambdaContext())
        assert answer["statusCode"] == 200
        assert handlers.item("605") is None
        messages = handlers.stack["sqs"].receive_message(
            QueueUrl=handlers.stack["dlq"], MaxNumberOfMessages=10
        )["Messages"]
        assert [json.loads(m["Body"])["task_id"] for m in messages] == ["605"]
        output = handlers.output()
        assert emitted_metrics(output)["CallbackToDeadLetter"] == 1 and TOKEN not in output

    def test_given_table_and_dlq_down_the_answer_is_503(self, handlers: Handlers) -> None:
        module = handlers.load("callback")
        with table_writes_failing(), dead_letters_failing():
            answer = module.handler(callback_get("606", TOKEN), FakeLambdaContext())
        assert answer["statusCode"] == 503
        assert handlers.metrics()["CallbackUnavailable"] == 1

    def test_2captcha_domain_verification(self, handlers: Handlers) -> None:
        answer = handlers.load("callback").handler(
            event("http_api_proxy.json") | {"routeKey": "GET /2captcha.txt"}, FakeLambdaContext()
        )
        assert (answer["statusCode"], answer["body"]) == (200, "verify-me-123")


class TestReplay:
    def test_dead_lettered_result_is_replayed_and_a_bad_message_is_reported(
        self, handlers: Handlers
    ) -> None:
        callback = handlers.load("callback")
        with table_writes_failing():
            callback.handler(callback_get("701", TOKEN), FakeLambdaContext())
        handlers.stack["sqs"].send_message(QueueUrl=handlers.stack["dlq"], MessageBody="not json")
        replay_event = handlers.dead_letter_event()
        answer = handlers.load("replay").handler(replay_event, FakeLambdaContext())
        bad = next(r["messageId"] for r in replay_event["Records"] if r["body"] == "not json")
        assert answer == {"batchItemFailures": [{"itemIdentifier": bad}]}
        stored = handlers.item("701")
        assert stored is not None and (stored["solution"]["S"], stored["delivered_via"]["S"]) == (
            TOKEN,
            "replay",
        )

    def test_replay_while_the_table_is_still_down_fails_the_record(
        self, handlers: Handlers
    ) -> None:
        with table_writes_failing():
            handlers.load("callback").handler(callback_get("702", TOKEN), FakeLambdaContext())
            replay = handlers.load("replay")
        replay_event = handlers.dead_letter_event()
        answer = replay.handler(replay_event, FakeLambdaContext())
        failed = [{"itemIdentifier": r["messageId"]} for r in replay_event["Records"]]
        assert answer == {"batchItemFailures": failed}


class TestPoller:
    def test_scheduled_sweep_recovers_a_missed_callback(self, handlers: Handlers) -> None:
        submit = handlers.load("submit")
        fake = FakeProvider(answers={"70000000001": TOKEN})
        handlers.monkeypatch.setattr(submit.service, "_accounts", ProviderAccounts.single(fake))
        due_at_once = replace(submit.service.pending, callback_timeout_seconds=0)
        handlers.monkeypatch.setattr(submit.service, "pending", due_at_once)
        for _ in range(2):
            submit.handler(event("submit_task.json"), FakeLambdaContext())
        handlers.monkeypatch.setenv("POLLER_RUN_SECONDS", "0")  # one sweep, not a minute of them
        poller = handlers.load("poller")
        handlers.monkeypatch.setattr(poller.service, "_accounts", ProviderAccounts.single(fake))
        # Past the template's ExpectedSolveSeconds (25 s): both are likely ready.
        handlers.monkeypatch.setattr(poller.service, "_clock", lambda: time.time() + 26)
        summary = poller.handler(event("scheduled_event.json"), FakeLambdaContext())
        assert (summary["due"], summary["recovered"], summary["not_ready"]) == (2, 1, 1)
        stored = handlers.item("70000000001")
        assert stored is not None and stored["delivered_via"]["S"] == "poll"
        not_ready = handlers.item("70000000002")
        assert not_ready is not None and "last_checked_at" in not_ready
        emitted = handlers.metrics()
        assert (emitted["PollRecovered"], emitted["PollerInvocations"]) == (1, 1)

    def test_a_runs_counts_are_published_after_each_sweep_and_once_in_all(
        self, handlers: Handlers
    ) -> None:
        # Given one task whose result is ready and a run of two sweeps
        submit = handlers.load("submit")
        fake = FakeProvider(answers={"70000000001": TOKEN})
        handlers.monkeypatch.setattr(submit.service, "_accounts", ProviderAccounts.single(fake))
        due_at_once = replace(submit.service.pending, callback_timeout_seconds=0)
        handlers.monkeypatch.setattr(submit.service, "pending", due_at_once)
        submit.handler(event("submit_task.json"), FakeLambdaContext())
        handlers.output()
        handlers.monkeypatch.setenv("POLLER_RUN_SECONDS", "50")
        poller = handlers.load("poller")
        handlers.monkeypatch.setattr(poller.service, "_accounts", ProviderAccounts.single(fake))
        later = time.time() + 26
        handlers.monkeypatch.setattr(poller.service, "_clock", lambda: later)
        between_sweeps: list[dict[str, float]] = []

        def sleep_between_sweeps(_seconds: float) -> None:
            between_sweeps.append(handlers.metrics())
            nonlocal later
            later += 60  # past the run's end: the second sweep is its last

        handlers.monkeypatch.setattr(poller.service, "_sleep", sleep_between_sweeps)
        handlers.monkeypatch.setattr(poller.service, "_work_ahead", lambda *_: True)
        # When the poller runs
        poller.handler(event("scheduled_event.json"), FakeLambdaContext())
        # Then the recovery was published while the run went on, and counted once in all
        assert between_sweeps and between_sweeps[0].get("PollRecovered") == 1
        rest = handlers.metrics()
        assert rest.get("PollRecovered") == 0 and rest["PollSweeps"] == 1

    def test_a_second_invocation_while_the_lease_is_held_skips_and_says_so(
        self, handlers: Handlers
    ) -> None:
        handlers.monkeypatch.setenv("POLLER_RUN_SECONDS", "0")
        poller = handlers.load("poller")
        store = poller.service._store
        now = time.time()
        assert store.acquire_poller_lease("another-invocation", now, now + 300).acquired
        summary = poller.handler(event("scheduled_event.json"), FakeLambdaContext())
        assert (summary["lease_busy"], summary["sweeps"]) == (1, 0)
        emitted = handlers.metrics()
        assert (emitted["PollLeaseBusy"], emitted["PollerInvocations"]) == (1, 1)

    def test_only_a_scheduled_run_that_returns_counts_as_the_poller_running(
        self, handlers: Handlers
    ) -> None:
        """PollerNotRunningAlarm's metric: a woken (or any other) run counts 0, a scheduled run
        that fails counts nothing; each under this function's name."""
        handlers.monkeypatch.setenv("POLLER_RUN_SECONDS", "0")
        poller = handlers.load("poller")
        context = FakeLambdaContext()

        def runs_counted(run_event: dict[str, Any]) -> list[tuple[MetricKey, float]]:
            poller.handler(run_event, context)
            lines = handlers.output().splitlines()
            return [
                (key, value)
                for line in lines
                for key, _at, value in emf_datapoints(line)
                if key.name == "PollerScheduledRuns"
            ]

        key = MetricKey.of(
            os.environ["POWERTOOLS_METRICS_NAMESPACE"],  # the template's, for this stack
            "PollerScheduledRuns",
            function_name=context.function_name,
            service="pingback-guard",
        )
        assert runs_counted(event("poller_schedule.json")) == [(key, 1.0)]
        assert runs_counted({"source": PollerStart.WOKEN.value}) == [(key, 0.0)]
        assert runs_counted(event("scheduled_event.json")) == [(key, 0.0)]  # not its schedule
        # Given a scheduled run that fails, then it counts as an invocation only
        handlers.monkeypatch.setattr(poller.service, "run", _fails)
        with pytest.raises(RuntimeError):
            poller.handler(event("poller_schedule.json"), context)
        emitted = handlers.metrics()
        assert emitted["PollerInvocations"] == 1 and "PollerScheduledRuns" not in emitted


def _fails(*_args: object, **_kwargs: object) -> NoReturn:
    raise RuntimeError("the sweep failed")


class TestSubmit:
    def test_submit_records_pending_with_this_stacks_pingback_url(self, handlers: Handlers) -> None:
        module = handlers.load("submit")
        fake = FakeProvider()
        handlers.monkeypatch.setattr(module.service, "_accounts", ProviderAccounts.single(fake))
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 202
        task_id = json.loads(answer["body"])["task_id"]
        ((submitted_id, url),) = fake.submitted
        base = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/callback/v2."
        assert submitted_id == task_id and url.startswith(base) and SECRET not in url
        stored = handlers.item(task_id)
        assert stored is not None and stored["status"]["S"] == "PENDING" and "due_at" in stored
        assert url.split(".")[-3] == stored["nonce"]["S"]
        assert stored["owner"]["S"] == "arn:aws:iam::123456789012:user/captcha-worker"

    def test_given_the_table_down_the_registration_goes_to_the_dlq_and_replays(
        self, handlers: Handlers
    ) -> None:
        with table_writes_failing():
            module = handlers.load("submit")
        handlers.monkeypatch.setattr(
            module.service, "_accounts", ProviderAccounts.single(FakeProvider())
        )
        handlers.monkeypatch.setattr(module.service, "_sleep", lambda _: None)
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 202
        task_id = json.loads(answer["body"])["task_id"]
        assert handlers.item(task_id) is None
        handlers.load("replay").handler(handlers.dead_letter_event(), FakeLambdaContext())
        stored = handlers.item(task_id)
        assert stored is not None and stored["status"]["S"] == "PENDING"

    def test_provider_rejection_is_422(self, handlers: Handlers) -> None:
        module = handlers.load("submit")
        handlers.monkeypatch.setattr(
            module.service,
            "_accounts",
            ProviderAccounts.single(
                FakeProvider(failure=lambda: ProviderRejectedError("in.php: ERROR_PAGEURL"))
            ),
        )
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 422 and "ERROR_PAGEURL" in answer["body"]

    @pytest.mark.parametrize("body", ["{", "[]", json.dumps({"sitekey": "x"}), ""])
    def test_invalid_body_is_400(self, handlers: Handlers, body: str) -> None:
        answer = handlers.load("submit").handler(
            event("submit_task.json") | {"body": body}, FakeLambdaContext()
        )
        assert answer["statusCode"] == 400

    def test_real_client_reads_the_key_from_ssm_and_unreachable_provider_is_503(
        self, handlers: Handlers
    ) -> None:
        module = handlers.load("submit")
        handlers.monkeypatch.setattr(
            module.service._accounts.primary, "_base_url", "http://127.0.0.1:9"
        )
        handlers.monkeypatch.setattr(module.service._accounts.primary, "_sleep", lambda _: None)
        answer = module.handler(event("submit_task.json"), FakeLambdaContext())
        assert answer["statusCode"] == 503
        assert module.service._accounts.primary._api_key() == API_KEY


class TestGetTask:
    def test_view_of_a_solved_task(self, handlers: Handlers) -> None:
        handlers.register("801")
        handlers.load("callback").handler(callback_get("801", TOKEN), FakeLambdaContext())
        shaped = event("get_task.json")
        shaped["pathParameters"] = {"task_id": "801"}
        answer = handlers.load("get_task").handler(shaped, FakeLambdaContext())
        view = json.loads(answer["body"])
        assert answer["statusCode"] == 200
        assert (view["status"], view["solution"], view["delivered_via"]) == (
            "SOLVED",
            TOKEN,
            "callback",
        )
        assert view["token_age_seconds"] >= 0

    @pytest.mark.parametrize(("task_id", "status"), [("802", 404), ("abc", 400), ("", 400)])
    def test_unknown_and_malformed(self, handlers: Handlers, task_id: str, status: int) -> None:
        shaped = with_principal(event("http_api_proxy.json"), OWNER)
        shaped["pathParameters"] = {"task_id": task_id}
        assert (
            handlers.load("get_task").handler(shaped, FakeLambdaContext())["statusCode"] == status
        )


class TestSubmitImages:
    """An image goes to the provider and nowhere else: not the table, not a log line, not an
    answer, accepted or refused."""

    IMAGE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()

    def image_event(self, **fields: object) -> dict[str, Any]:
        submit = event("submit_task.json")
        body = {"method": "base64", "body": self.IMAGE, "phrase": 1, **fields}
        return {**submit, "body": json.dumps(body), "isBase64Encoded": False}

    def test_an_image_is_sent_and_never_kept_or_logged(self, handlers: Handlers) -> None:
        module = handlers.load("submit")
        fake = FakeProvider()
        handlers.monkeypatch.setattr(module.service, "_accounts", ProviderAccounts.single(fake))
        answer = module.handler(self.image_event(), FakeLambdaContext())
        assert answer["statusCode"] == 202
        (sent,) = fake.submitted_requests
        assert isinstance(sent, CaptchaRequest) and sent.fields["body"] == self.IMAGE
        stored = handlers.item(json.loads(answer["body"])["task_id"])
        assert stored is not None and stored["method"]["S"] == "base64"
        assert self.IMAGE[:32] not in json.dumps(stored)
        assert self.IMAGE[:32] not in handlers.capsys.readouterr().out

    @pytest.mark.parametrize(
        ("fields", "named"),
        [({"numeric": 9}, "numeric"), ({"sitekey": "x"}, "sitekey"), ({"body": "@@"}, "body")],
    )
    def test_a_refused_image_request_names_the_field_and_echoes_nothing(
        self, handlers: Handlers, fields: dict[str, object], named: str
    ) -> None:
        module = handlers.load("submit")
        answer = module.handler(self.image_event(**fields), FakeLambdaContext())
        refusal = json.loads(answer["body"])
        assert answer["statusCode"] == 400 and refusal["error"] == "invalid_field"
        assert refusal["reason"].startswith(named)
        assert self.IMAGE[:32] not in answer["body"] + handlers.capsys.readouterr().out
