"""Issue 9 through the handlers (moto): one leaked pingback URL decides its own task and no
other, tasks are scoped to their submitter, tasks submitted elsewhere can be registered, and no
route crashes on nested or non-text input."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.lambda_context import FakeLambdaContext
from pingback_guard.domain.bounded_json import MAX_JSON_DEPTH
from pingback_guard.logic import capability
from pingback_guard.logic.accounts import ProviderAccounts
from tests.fakes import FakeProvider, nonce_for
from tests.integration.handler_support import (
    OWNER,
    SECRET,
    TOKEN,
    Handlers,
    callback_get,
    capability_for,
    event,
    table_writes_failing,
    with_principal,
)

OTHER_OWNER = "arn:aws:iam::123456789012:user/someone-else"
ADMIN = "arn:aws:iam::123456789012:role/ops-admin"
FORGED = "03AFforged" + "F" * 300
Handler = Callable[[dict[str, Any]], dict[str, Any]]


def call(module: ModuleType) -> Handler:
    return lambda shaped: module.handler(shaped, FakeLambdaContext())


def capability_of(url: str) -> str:
    return urlsplit(url).path.rsplit("/", 1)[1]


@pytest.fixture
def submitted(handlers: Handlers) -> tuple[Handler, FakeProvider]:
    """POST /tasks with a fake provider that records the pingback URL of each task."""
    module = handlers.load("submit")
    provider = FakeProvider()
    module.service._accounts = ProviderAccounts.single(provider)
    return call(module), provider


def submit(handler: Handler, principal: str = OWNER) -> str:
    answer = handler(with_principal(event("submit_task.json"), principal))
    assert answer["statusCode"] == 202, answer
    task_id: str = json.loads(answer["body"])["task_id"]
    return task_id


class TestOneLeakedUrl:
    def test_task_as_url_cannot_decide_task_b_nor_a_future_task(
        self, handlers: Handlers, submitted: tuple[Handler, FakeProvider]
    ) -> None:
        submit_task, provider = submitted
        callback = call(handlers.load("callback"))
        task_a, task_b = submit(submit_task), submit(submit_task)
        urls = dict(provider.submitted)
        leaked = capability_of(urls[task_a])
        assert capability_of(urls[task_b]) != leaked

        # Given A's URL, When the attacker uses it on B (token or failure), Then 403, B untouched.
        for code in (FORGED, "ERROR_CAPTCHA_UNSOLVABLE"):
            assert callback(callback_get(task_b, code, leaked))["statusCode"] == 403
        stored_b = handlers.item(task_b)
        assert stored_b is not None and stored_b["status"]["S"] == "PENDING"
        assert "solution" not in stored_b and "due_at" in stored_b

        # When the attacker pre-seeds the next id the provider will hand out...
        future = str(provider.next_task_id)
        assert callback(callback_get(future, FORGED, leaked))["statusCode"] == 200
        # ...Then the real submit of that id discards it, and its own pingback wins.
        assert submit(submit_task) == future
        stored_future = handlers.item(future)
        assert stored_future is not None and stored_future["status"]["S"] == "PENDING"
        assert "solution" not in stored_future
        own = capability_of(dict(provider.submitted)[future])
        assert callback(callback_get(future, TOKEN, own))["statusCode"] == 200
        assert (
            callback(callback_get(task_b, TOKEN, capability_of(urls[task_b])))["statusCode"] == 200
        )
        for task_id in (future, task_b):
            stored = handlers.item(task_id)
            assert stored is not None and stored["solution"]["S"] == TOKEN

        # And A's URL still decides A (its own task, as designed).
        assert callback(callback_get(task_a, TOKEN, leaked))["statusCode"] == 200
        metrics = handlers.metrics()
        assert metrics["CallbackProofMismatch"] == 2
        assert metrics["ProvisionalResultDiscarded"] == 1
        assert metrics["CallbackUnregistered"] == 1

    def test_a_capability_forged_or_made_under_another_secret_is_403(
        self, handlers: Handlers
    ) -> None:
        handlers.register("4001")
        callback = call(handlers.load("callback"))
        genuine = capability_for("4001")
        forged = [
            capability.mint("AnotherStacksSecret00000000000001", time.time()).token,
            genuine[:-2] + ("AA" if not genuine.endswith("AA") else "QA"),
            "v1." + nonce_for("4001") + "." + nonce_for("4002"),
            genuine.replace("v2.", "v1.", 1),
            capability_for("4001", issued_at=time.time() - 1201),  # past its lifetime
        ]
        for token in forged:
            assert callback(callback_get("4001", FORGED, token))["statusCode"] == 403
        stored = handlers.item("4001")
        assert stored is not None and stored["status"]["S"] == "PENDING"

    def test_account_and_retry_statuses_are_refused_and_change_nothing(
        self, handlers: Handlers
    ) -> None:
        handlers.register("4010")
        callback = call(handlers.load("callback"))
        for code in ("ERROR_ZERO_BALANCE", "ERROR_NO_SLOT_AVAILABLE", "CAPCHA_NOT_READY"):
            assert callback(callback_get("4010", code))["statusCode"] == 400
        stored = handlers.item("4010")
        assert stored is not None and stored["status"]["S"] == "PENDING"

    def test_only_known_task_failure_codes_mark_failed(self, handlers: Handlers) -> None:
        handlers.register("4011")
        callback = call(handlers.load("callback"))
        assert callback(callback_get("4011", "ERROR_CAPTCHA_UNSOLVABLE"))["statusCode"] == 200
        stored = handlers.item("4011")
        assert stored is not None and stored["status"]["S"] == "FAILED"

    def test_an_unknown_error_looking_answer_is_kept_as_the_answer(
        self, handlers: Handlers
    ) -> None:
        handlers.register("4012")
        callback = call(handlers.load("callback"))
        assert callback(callback_get("4012", "ERROR_SOMETHING_ELSE"))["statusCode"] == 200
        stored = handlers.item("4012")
        assert stored is not None and stored["status"]["S"] == "SOLVED"
        assert stored["solution"]["S"] == "ERROR_SOMETHING_ELSE"


class TestRetiredUrls:
    def test_the_whole_secret_url_decides_no_task_not_even_one_from_before_capabilities(
        self, handlers: Handlers
    ) -> None:
        handlers.register("4100", nonce=None, owner=None)
        handlers.register("4101")
        callback = call(handlers.load("callback"))
        for task_id in ("4100", "4101", "4102"):
            assert callback(callback_get(task_id, FORGED, SECRET))["statusCode"] == 403
        for task_id in ("4100", "4101"):
            stored = handlers.item(task_id)
            assert stored is not None and stored["status"]["S"] == "PENDING"
        assert handlers.item("4102") is None


class TestReplay:
    def test_a_dead_lettered_pingback_carries_its_nonce_and_the_same_rule_holds(
        self, handlers: Handlers
    ) -> None:
        handlers.register("4200")
        handlers.register("4201")
        callback = handlers.load("callback")
        with table_writes_failing():
            assert call(callback)(callback_get("4200", TOKEN))["statusCode"] == 200
        # The attacker's pingback also reaches the queue (MAC checked, table down)...
        assert (
            call(callback)(callback_get("4201", FORGED, capability_for("4200")))["statusCode"]
            == 200
        )
        replay_event = handlers.dead_letter_event()
        bodies = [json.loads(record["body"]) for record in replay_event["Records"]]
        assert {b["task_id"]: b["nonce"] for b in bodies} == {
            "4200": nonce_for("4200"),
            "4201": nonce_for("4200"),
        }
        assert handlers.load("replay").handler(replay_event, FakeLambdaContext()) == {
            "batchItemFailures": []
        }
        # ...but replay applies it only to the nonce's own task.
        stored = handlers.item("4200")
        assert stored is not None and stored["solution"]["S"] == TOKEN
        other = handlers.item("4201")
        assert other is not None and other["status"]["S"] == "PENDING"

    @pytest.mark.parametrize(
        "body",
        [
            {"task_id": "4300", "code": "a" * 100_00, "received_at": 1.0e9 * 1.8},
            {"task_id": "4300", "code": TOKEN, "received_at": 1.0e15},
            {"task_id": "4300", "code": "ERROR_WHATEVER", "received_at": 1.8e9},
            {
                "kind": "submission",
                "task_id": "4300",
                "request": {"method": "evil", "sitekey": "k", "page_url": "https://a.test"},
                "submitted_at": 1.8e9,
                "first_poll_at": 1.8e9 + 120,
            },
            "[" * 20_000,
        ],
    )
    def test_messages_breaking_the_edge_rules_fail_counted_toward_parking(
        self,
        handlers: Handlers,
        body: object,
    ) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        handlers.stack["sqs"].send_message(QueueUrl=handlers.stack["dlq"], MessageBody=text)
        replay_event = handlers.dead_letter_event()
        answer = handlers.load("replay").handler(replay_event, FakeLambdaContext())
        assert answer == {
            "batchItemFailures": [{"itemIdentifier": replay_event["Records"][0]["messageId"]}]
        }
        assert handlers.item("4300") is None
        metrics = handlers.metrics()
        assert metrics["ReplayRejected"] == 1 and metrics["ReplayFailed"] == 1


class TestOwnership:
    def get(self, handlers: Handlers, task_id: str, principal: str | None) -> int:
        shaped = with_principal(event("get_task.json"), principal)
        shaped["pathParameters"] = {"task_id": task_id}
        status: int = handlers.load("get_task").handler(shaped, FakeLambdaContext())["statusCode"]
        return status

    def test_only_the_submitter_reads_a_task_others_get_404(
        self, handlers: Handlers, submitted: tuple[Handler, FakeProvider]
    ) -> None:
        task_id = submit(submitted[0], OWNER)
        assert self.get(handlers, task_id, OWNER) == 200
        assert self.get(handlers, task_id, OTHER_OWNER) == 404
        assert self.get(handlers, "99999999", OWNER) == 404
        assert self.get(handlers, task_id, None) == 403

    def test_the_admin_principal_reads_every_task(self, handlers: Handlers) -> None:
        handlers.register("4400", owner=OWNER)
        handlers.monkeypatch.setenv("ADMIN_PRINCIPAL_ARN", ADMIN)
        assert self.get(handlers, "4400", ADMIN) == 200
        assert self.get(handlers, "4400", OTHER_OWNER) == 404

    def test_a_task_from_before_owners_stays_readable_a_provisional_one_does_not(
        self, handlers: Handlers
    ) -> None:
        handlers.register("4401", nonce=None, owner=None)
        call(handlers.load("callback"))(callback_get("4402", TOKEN))
        assert self.get(handlers, "4401", OTHER_OWNER) == 200
        assert self.get(handlers, "4402", OWNER) == 404

    def test_submit_without_a_principal_is_403(
        self, submitted: tuple[Handler, FakeProvider]
    ) -> None:
        answer = submitted[0](with_principal(event("submit_task.json"), None))
        assert answer["statusCode"] == 403 and submitted[1].submitted == []


REGISTRATION = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://www.google.com/recaptcha/api2/demo",
    "extras": {"version": "v3", "action": "login"},
}


class TestRegistration:
    @pytest.fixture
    def provider(self) -> FakeProvider:
        """res.php: every id is known (not ready) unless a test says otherwise."""
        return FakeProvider(next_task_id=4700)

    @pytest.fixture
    def register_module(self, handlers: Handlers, provider: FakeProvider) -> ModuleType:
        module = handlers.load("register")
        module.service._provider = provider
        return module

    @pytest.fixture
    def registrar(self, register_module: ModuleType) -> Handler:
        return call(register_module)

    def issue(self, registrar: Handler, principal: str | None = OWNER) -> dict[str, Any]:
        answer = registrar(with_principal(event("issue_pingback_url.json"), principal))
        return {"status": answer["statusCode"], **json.loads(answer["body"])}

    def url(self, registrar: Handler, principal: str = OWNER) -> str:
        url: str = self.issue(registrar, principal)["pingback_url"]
        return url

    def put(
        self, registrar: Handler, task_id: str, body: object, principal: str | None = OWNER
    ) -> tuple[int, dict[str, Any]]:
        shaped = with_principal(event("register_task.json"), principal)
        shaped["pathParameters"] = {"task_id": task_id}
        shaped["body"] = body if isinstance(body, str) else json.dumps(body)
        shaped["isBase64Encoded"] = False
        answer = registrar(shaped)
        return answer["statusCode"], json.loads(answer["body"])

    def get(self, handlers: Handlers, task_id: str, principal: str) -> tuple[int, dict[str, Any]]:
        shaped = with_principal(event("get_task.json"), principal)
        shaped["pathParameters"] = {"task_id": task_id}
        answer = handlers.load("get_task").handler(shaped, FakeLambdaContext())
        return answer["statusCode"], json.loads(answer["body"])

    def test_issue_then_register_then_the_pingback_is_stored(
        self, registrar: Handler, handlers: Handlers
    ) -> None:
        issued = self.issue(registrar)
        assert issued["status"] == 201
        assert time.time() < issued["expires_at"] <= time.time() + 600
        url = issued["pingback_url"]
        assert "/callback/v2." in url and SECRET not in url
        body = {**REGISTRATION, "pingback_url": url}
        assert self.put(registrar, "4500", body) == (201, {"task_id": "4500"})
        stored = handlers.item("4500")
        assert stored is not None
        assert (stored["status"]["S"], stored["owner"]["S"]) == ("PENDING", OWNER)
        assert stored["origin"]["S"] == "register"
        assert stored["nonce"]["S"] == capability_of(url).split(".")[1] and "due_at" in stored
        assert self.put(registrar, "4500", body) == (200, {"task_id": "4500"})
        changed = {**body, "page_url": "https://example.test/other"}
        status, answer = self.put(registrar, "4500", changed)
        assert status == 409 and answer["error"] == "conflict"
        callback = call(handlers.load("callback"))
        assert callback(callback_get("4500", TOKEN, capability_of(url)))["statusCode"] == 200
        # A URL that registered a task keeps no result under another id.
        assert callback(callback_get("4501", FORGED, capability_of(url)))["statusCode"] == 403
        stored = handlers.item("4500")
        assert stored is not None and stored["solution"]["S"] == TOKEN
        assert handlers.item("4501") is None

    def test_a_url_registers_one_task_for_the_principal_it_was_issued_to_within_its_window(
        self, registrar: Handler, register_module: ModuleType
    ) -> None:
        url = self.url(registrar)
        body = {**REGISTRATION, "pingback_url": url}
        # Another principal holding the URL, then a second id: refused alike.
        assert self.put(registrar, "4530", body, OTHER_OWNER)[0] == 400
        assert self.put(registrar, "4530", body)[0] == 201
        status, answer = self.put(registrar, "4531", body)
        assert status == 400 and "registered another task" in answer["reason"]
        # Past the registration window (one retention window, 600 s) of its issue.
        late = {**REGISTRATION, "pingback_url": self.url(registrar)}
        register_module.service._clock = lambda: time.time() + 601
        assert self.put(registrar, "4532", late)[0] == 400

    def test_a_pingback_before_the_registration_is_kept_and_another_nonce_discarded(
        self, registrar: Handler, handlers: Handlers
    ) -> None:
        mine, theirs = self.url(registrar), self.url(registrar, OTHER_OWNER)
        callback = call(handlers.load("callback"))
        assert callback(callback_get("4510", TOKEN, capability_of(mine)))["statusCode"] == 200
        assert callback(callback_get("4511", FORGED, capability_of(theirs)))["statusCode"] == 200
        # One provisional result per capability: a second id is refused.
        assert callback(callback_get("4512", FORGED, capability_of(theirs)))["statusCode"] == 403
        assert handlers.item("4512") is None
        assert self.put(registrar, "4510", {**REGISTRATION, "pingback_url": mine})[0] == 201
        third = self.url(registrar)
        assert self.put(registrar, "4511", {**REGISTRATION, "pingback_url": third})[0] == 201
        kept, discarded = handlers.item("4510"), handlers.item("4511")
        assert kept is not None and kept["solution"]["S"] == TOKEN
        assert discarded is not None and "solution" not in discarded
        assert discarded["status"]["S"] == "PENDING"
        metrics = handlers.metrics()
        assert metrics["ProvisionalResultDiscarded"] == 1 and metrics["CallbackUnregistered"] == 2

    def test_an_id_the_provider_has_not_handed_out_cannot_be_registered(
        self, registrar: Handler, handlers: Handlers, provider: FakeProvider
    ) -> None:
        provider.answers["4540"] = "ERROR_WRONG_CAPTCHA_ID"
        url = self.url(registrar)
        status, answer = self.put(registrar, "4540", {**REGISTRATION, "pingback_url": url})
        assert (status, answer["error"]) == (404, "unknown_task")
        assert handlers.item("4540") is None and provider.requests == [["4540"]]

    def test_the_stacks_own_submit_replaces_any_registration_of_its_id(
        self,
        registrar: Handler,
        handlers: Handlers,
        provider: FakeProvider,
    ) -> None:
        submit_module = handlers.load("submit")
        submit_module.service._accounts = ProviderAccounts.single(provider)
        future = str(provider.next_task_id)
        # Given another principal's registration of the id the provider hands out next, with
        # a forged result posted through its own URL...
        rogue = self.url(registrar, OTHER_OWNER)
        callback = call(handlers.load("callback"))
        assert callback(callback_get(future, FORGED, capability_of(rogue)))["statusCode"] == 200
        assert (
            self.put(registrar, future, {**REGISTRATION, "pingback_url": rogue}, OTHER_OWNER)[0]
            == 201
        )
        # ...When the victim submits and gets that id, Then it owns the task (202 means so).
        assert submit(call(submit_module), OWNER) == future
        assert self.get(handlers, future, OTHER_OWNER)[0] == 404
        status, view = self.get(handlers, future, OWNER)
        assert (status, view["status"], view["solution"]) == (200, "PENDING", None)
        # The attacker's URL no longer decides it; the provider's pingback does.
        assert callback(callback_get(future, FORGED, capability_of(rogue)))["statusCode"] == 403
        victims = capability_of(dict(provider.submitted)[future])
        assert callback(callback_get(future, TOKEN, victims))["statusCode"] == 200
        assert self.get(handlers, future, OWNER)[1]["solution"] == TOKEN
        stored = handlers.item(future)
        assert stored is not None and stored["owner"]["S"] == OWNER
        assert stored["origin"]["S"] == "submit"
        assert handlers.metrics()["RegistrationReplaced"] == 1

    def test_a_registration_of_an_id_a_submit_holds_answers_as_any_and_changes_nothing(
        self, registrar: Handler, handlers: Handlers, provider: FakeProvider
    ) -> None:
        submit_module = handlers.load("submit")
        submit_module.service._accounts = ProviderAccounts.single(provider)
        task_id = submit(call(submit_module), OWNER)
        rogue = self.url(registrar, OTHER_OWNER)
        answer = self.put(registrar, task_id, {**REGISTRATION, "pingback_url": rogue}, OTHER_OWNER)
        assert answer == (201, {"task_id": task_id})
        stored = handlers.item(task_id)
        assert stored is not None and stored["owner"]["S"] == OWNER and "rivals" not in stored
        assert self.get(handlers, task_id, OTHER_OWNER)[0] == 404
        assert handlers.metrics()["RegistrationClash"] == 1

    def test_two_registrations_of_one_id_share_nothing_until_a_pingback_decides(
        self, registrar: Handler, handlers: Handlers
    ) -> None:
        first, second = self.url(registrar), self.url(registrar, OTHER_OWNER)
        assert self.put(registrar, "4550", {**REGISTRATION, "pingback_url": first})[0] == 201
        answer = self.put(registrar, "4550", {**REGISTRATION, "pingback_url": second}, OTHER_OWNER)
        assert answer == (201, {"task_id": "4550"})
        stored = handlers.item("4550")
        assert stored is not None and "due_at" not in stored  # the poller leaves it alone
        for principal in (OWNER, OTHER_OWNER):
            assert self.get(handlers, "4550", principal) == (
                200,
                {"task_id": "4550", "status": "PENDING", "solution": None},
            )
        # The pingback carries the second claim's capability: the task is its owner's.
        callback = call(handlers.load("callback"))
        assert callback(callback_get("4550", TOKEN, capability_of(second)))["statusCode"] == 200
        assert self.get(handlers, "4550", OTHER_OWNER)[1]["solution"] == TOKEN
        assert self.get(handlers, "4550", OWNER)[0] == 404
        assert callback(callback_get("4550", FORGED, capability_of(first)))["statusCode"] == 403
        stored = handlers.item("4550")
        assert stored is not None and stored["owner"]["S"] == OTHER_OWNER
        assert "rivals" not in stored
        assert handlers.metrics()["RegistrationClash"] == 1

    REGISTRATION_REFUSALS = frozenset(
        {"invalid_task_id", "invalid_pingback_url", "invalid_field", "invalid_body"}
    )

    @pytest.mark.parametrize(
        ("task_id", "body"),
        [
            ("abc", {**REGISTRATION, "pingback_url": "https://x.test/callback/v1.a.b"}),
            ("4520", {**REGISTRATION}),
            ("4520", {**REGISTRATION, "pingback_url": "https://x.test/callback/" + SECRET}),
            ("4520", {**REGISTRATION, "pingback_url": "https://x.test/callback/v1.AAAA.BBBB"}),
            (
                "4520",
                {
                    **REGISTRATION,
                    "pingback_url": "https://x.test/callback/"
                    + capability.mint("AnotherStacksSecret00000000000001", 1.8e9).token,
                },
            ),
            ("4520", {**REGISTRATION, "pingback_url": 7}),
            ("4520", {**REGISTRATION, "method": "evil", "pingback_url": "https://x.test/"}),
            ("4520", {**REGISTRATION, "unknown": 1}),
            ("4520", []),
            ("4520", "{"),
            ("4520", "[" * 5000),
        ],
    )
    def test_bad_registrations_are_400_with_a_reason(
        self, registrar: Handler, handlers: Handlers, task_id: str, body: object
    ) -> None:
        status, answer = self.put(registrar, task_id, body)
        assert status == 400 and answer["error"] in self.REGISTRATION_REFUSALS and answer["reason"]
        assert handlers.item("4520") is None

    def test_no_principal_is_403(self, registrar: Handler) -> None:
        assert self.issue(registrar, None)["status"] == 403


# ------------------------------------------------------------------ fuzzed, nested, non-text

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=10,
)
field_names = st.sampled_from(
    ["method", "sitekey", "page_url", "extras", "pingback_url", "id", "code", "x"]
)
documents = st.one_of(
    json_values,
    st.dictionaries(field_names, json_values, max_size=6),
)
nested = st.integers(min_value=900, max_value=4000).map(lambda depth: "[" * depth + "]" * depth)
bodies = st.one_of(documents.map(json.dumps), nested, st.text(max_size=50))
path_texts = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["\ud800", "v1.\udfff", "1\ud800", "v1." + "A" * 22 + "." + "\ud800" * 22]),
)
FUZZ = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def body_event(name: str, body: str, principal: str | None = OWNER) -> dict[str, Any]:
    shaped = with_principal(event(name), principal)
    shaped["body"] = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode()
    shaped["isBase64Encoded"] = True
    return shaped


@FUZZ
@given(body=bodies)
def test_submit_never_crashes(submitted: tuple[Handler, FakeProvider], body: str) -> None:
    answer = submitted[0](body_event("submit_task.json", body))
    assert answer["statusCode"] in {202, 400}


@FUZZ
@given(body=bodies, task_id=path_texts)
def test_register_never_crashes(handlers: Handlers, body: str, task_id: str) -> None:
    shaped = body_event("register_task.json", body)
    shaped["pathParameters"] = {"task_id": task_id}
    answer = handlers.load("register").handler(shaped, FakeLambdaContext())
    assert answer["statusCode"] == 400


@FUZZ
@given(body=bodies)
def test_issue_never_crashes(handlers: Handlers, body: str) -> None:
    answer = handlers.load("register").handler(
        body_event("issue_pingback_url.json", body), FakeLambdaContext()
    )
    assert answer["statusCode"] == 201


@FUZZ
@given(task_id=path_texts)
def test_get_never_crashes(handlers: Handlers, task_id: str) -> None:
    shaped = with_principal(event("get_task.json"), OWNER)
    shaped["pathParameters"] = {"task_id": task_id}
    assert handlers.load("get_task").handler(shaped, FakeLambdaContext())["statusCode"] in {
        400,
        404,
    }


@FUZZ
@given(body=bodies, secret=path_texts, task_id=path_texts, code=path_texts)
def test_callback_never_crashes_nor_stores_unproven(
    handlers: Handlers,
    body: str,
    secret: str,
    task_id: str,
    code: str,
) -> None:
    handlers.register("4600")
    module = handlers.load("callback")
    for path in (secret, capability_for("4600")):
        shaped = callback_get(task_id, code, path)
        shaped["requestContext"]["http"]["method"] = "POST"
        shaped["headers"]["content-type"] = "application/json"
        shaped["body"] = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode()
        shaped["isBase64Encoded"] = True
        answer = module.handler(shaped, FakeLambdaContext())
        assert answer["statusCode"] in {200, 400, 403}
    stored = handlers.item("4600")
    assert (stored is not None and "solution" not in stored) or task_id.strip() == "4600"


@FUZZ
@given(body=bodies)
def test_replay_never_crashes(handlers: Handlers, body: str) -> None:
    record = event("sqs_receive_message.json")["Records"][0] | {"body": body}
    answer = handlers.load("replay").handler({"Records": [record]}, FakeLambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000])
def test_nested_json_is_a_400_on_every_json_route(
    handlers: Handlers, submitted: tuple[Handler, FakeProvider], depth: int
) -> None:
    """One bounded parser (bytes and depth) on every route: never a RecursionError 500."""
    body = "[" * depth + "]" * depth
    routes: list[tuple[Handler, dict[str, Any]]] = [
        (submitted[0], body_event("submit_task.json", body)),
        (call(handlers.load("register")), body_event("register_task.json", body)),
        (call(handlers.load("report")), body_event("report_task.json", body)),
    ]
    pingback = callback_get("4700", TOKEN)
    pingback["requestContext"]["http"]["method"] = "POST"
    pingback["headers"]["content-type"] = "application/json"
    pingback["body"], pingback["isBase64Encoded"] = body, False
    for handler, shaped in routes:
        answer = handler(shaped)
        assert answer["statusCode"] == 400, answer
        assert json.loads(answer["body"])["error"] in {"invalid_body", "invalid_field"}
    answer = call(handlers.load("callback"))(pingback)
    assert answer["statusCode"] == 400 and "nest" in answer["body"]
    assert submitted[1].submitted == [] and handlers.item("4700") is None


class TestSmokeTasks:
    """POST /smoke-tasks and DELETE /smoke-tasks/{id}: the admin's synthetic task, decided by its
    own pingback, deleted by its owner only."""

    def smoke(self, handlers: Handlers, admin: str = ADMIN) -> Handler:
        handlers.monkeypatch.setenv("ADMIN_PRINCIPAL_ARN", admin)
        return call(handlers.load("register"))

    def delete(self, registrar: Handler, task_id: str, principal: str) -> int:
        shaped = with_principal(event("delete_smoke_task.json"), principal)
        shaped["pathParameters"] = {"task_id": task_id}
        status: int = registrar(shaped)["statusCode"]
        return status

    def test_the_admins_smoke_task_is_decided_by_its_own_pingback_then_deleted(
        self, handlers: Handlers
    ) -> None:
        registrar = self.smoke(handlers)
        answer = registrar(with_principal(event("create_smoke_task.json"), ADMIN))
        assert answer["statusCode"] == 201, answer
        created = json.loads(answer["body"])
        task_id, url = created["task_id"], created["pingback_url"]
        stored = handlers.item(task_id)
        assert stored is not None
        assert (stored["origin"]["S"], stored["owner"]["S"], stored["status"]["S"]) == (
            "smoke",
            ADMIN,
            "PENDING",
        )
        assert "due_at" not in stored and "due_shard" not in stored
        callback = call(handlers.load("callback"))
        forged = capability.token_for("not-the-secret", stored["nonce"]["S"], int(time.time()))
        assert callback(callback_get(task_id, TOKEN, forged))["statusCode"] == 403
        assert callback(callback_get(task_id, TOKEN, capability_of(url)))["statusCode"] == 200
        solved = handlers.item(task_id)
        assert solved is not None
        assert (solved["status"]["S"], solved["solution"]["S"]) == ("SOLVED", TOKEN)

        assert self.delete(registrar, task_id, OTHER_OWNER) == 403
        assert self.delete(registrar, task_id, ADMIN) == 200
        assert handlers.item(task_id) is None
        assert self.delete(registrar, task_id, ADMIN) == 404
        assert self.delete(registrar, "not-digits", ADMIN) == 400
        metrics = handlers.metrics()
        assert (metrics["SmokeTaskCreated"], metrics["SmokeTaskDeleted"]) == (1, 1)

    def test_delete_never_removes_a_task_that_is_not_a_smoke_task(self, handlers: Handlers) -> None:
        handlers.register("4800", owner=ADMIN)
        assert self.delete(self.smoke(handlers), "4800", ADMIN) == 404
        assert handlers.item("4800") is not None

    @pytest.mark.parametrize(("admin", "caller"), [("", ADMIN), (ADMIN, OWNER)])
    def test_nobody_else_creates_one(self, handlers: Handlers, admin: str, caller: str) -> None:
        answer = self.smoke(handlers, admin)(
            with_principal(event("create_smoke_task.json"), caller)
        )
        assert answer["statusCode"] == 403
        assert json.loads(answer["body"])["error"] == "forbidden"
