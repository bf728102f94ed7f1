"""Callback rules: parsing every shape a provider sends, authentication, store-or-DLQ."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest

from pingback_guard.domain.errors import InvalidCallbackError, ResultNotSafeError
from pingback_guard.domain.task import DeliveryPath, NewTask, TaskResult, TaskStatus
from pingback_guard.logic import capability
from pingback_guard.logic.callback import CallbackOutcome, CallbackService
from pingback_guard.logic.pingback_request import CallbackRequest, parse_callback
from pingback_guard.logic.pingback_secrets import (
    CallbackAuthenticator,
    CallbackSecrets,
    CapabilityLifetime,
)
from tests.fakes import (
    ODD_BUT_REAL_ANSWERS,
    FakeDeadLetterQueue,
    InMemoryTaskStore,
    nonce_for,
    token_request,
    unavailable,
)

TOKEN = "03AFcWeA5" + "k" * 1200
SECRET = "Zx9" * 10
FORM = "application/x-www-form-urlencoded"


def request(
    method: str = "GET",
    query: dict[str, str] | None = None,
    body: bytes = b"",
    content_type: str = "",
) -> CallbackRequest:
    return CallbackRequest(method, query or {}, content_type, body)


class TestParse:
    def test_captchaai_get_query(self) -> None:
        result = parse_callback(
            request(query={"id": "73612345678", "code": TOKEN}), received_at=5.0
        )
        assert (result.task_id, result.code, result.delivered_via, result.received_at) == (
            "73612345678",
            TOKEN,
            DeliveryPath.CALLBACK,
            5.0,
        )

    def test_2captcha_form_post_with_rate(self) -> None:
        body = f"id=123&code={TOKEN}&rate=0.00299".encode()
        result = parse_callback(
            request("POST", body=body, content_type=f"{FORM}; charset=UTF-8"), 1.0
        )
        assert (result.task_id, result.code) == ("123", TOKEN)

    def test_json_body_with_numeric_id(self) -> None:
        body = json.dumps({"id": 123, "code": TOKEN}).encode()
        assert (
            parse_callback(request("POST", body=body, content_type="application/json"), 1.0).task_id
            == "123"
        )

    @pytest.mark.parametrize(
        "answer",
        [*ODD_BUT_REAL_ANSWERS, "ERROR_ANYTHING_AN_OCR_READS"],
    )
    def test_any_answer_is_taken_exactly_as_sent(self, answer: str) -> None:
        """Given an odd but real answer in a form pingback, then it is the result as sent."""
        body = urlencode({"id": "7", "code": answer}).encode()
        result = parse_callback(request("POST", body=body, content_type=FORM), 1.0)
        assert result.code == answer and not result.is_failure

    def test_error_code_is_a_failure(self) -> None:
        result = parse_callback(request(query={"id": "1", "code": "ERROR_CAPTCHA_UNSOLVABLE"}), 1.0)
        assert result.is_failure

    @pytest.mark.parametrize(
        ("req", "message"),
        [
            (request(query={"code": TOKEN}), "task id"),
            (request(query={"id": "12a", "code": TOKEN}), "task id"),
            (request(query={"id": "1" * 21, "code": TOKEN}), "task id"),
            (request(query={"id": "1,2", "code": TOKEN}), "task id"),
            (request(query={"id": "1"}), "code"),
            (request(query={"id": "1", "code": "x" * 8193}), "code"),
            (request("POST", body=b"\xff\xfe", content_type=FORM), "UTF-8"),
            (request("POST", body=b"id=1&id=2&code=x", content_type=FORM), "once"),
            (request("POST", body=b"{", content_type="application/json"), "JSON"),
            (request("POST", body=b"[1]", content_type="application/json"), "object"),
            (request("POST", body=b"<x/>", content_type="text/xml"), "content type"),
            (request("POST", body=b"a" * 20000, content_type=FORM), "too large"),
            (request("PUT", query={"id": "1", "code": TOKEN}), "method"),
            (request(query={"id": "1", "code": "ERROR_ZERO_BALANCE"}), "status"),
            (request(query={"id": "1", "code": "CAPCHA_NOT_READY"}), "status"),
            (request(query={"id": "1", "code": "я" * 4097}), "bytes"),
            (request("POST", body=b"[" * 5000, content_type="application/json"), "JSON"),
            (
                request(
                    "POST",
                    body=b'{"a":' * 2500 + b"1" + b"}" * 2500,
                    content_type="application/json",
                ),
                "JSON",
            ),
        ],
    )
    def test_malformed_requests_are_refused_with_a_reason(
        self, req: CallbackRequest, message: str
    ) -> None:
        with pytest.raises(InvalidCallbackError, match=message):
            parse_callback(req, 1.0)


NOW = 1_800_000_000.0
LIFETIME = CapabilityLifetime(max_age_seconds=1200)


def authenticator(
    load: Callable[[bool], CallbackSecrets], now: float = NOW, **kwargs: Any
) -> CallbackAuthenticator:
    return CallbackAuthenticator(load, LIFETIME, wall_clock=lambda: now, **kwargs)


def current_only(_force: bool) -> CallbackSecrets:
    return CallbackSecrets(current=SECRET)


class TestCapability:
    def test_a_minted_capability_proves_its_nonce_and_issue_time_under_both_secrets(
        self,
    ) -> None:
        minted = capability.mint(SECRET, NOW)
        proof = authenticator(current_only).verify(minted.token)
        assert proof == capability.ProvenCapability(minted.nonce, int(NOW))
        rotated = CallbackSecrets(current="N" * 20, previous=SECRET)
        assert authenticator(lambda force: rotated).verify(minted.token) == proof

    def test_the_url_carries_neither_the_secret_nor_the_mac_key(self) -> None:
        token = capability.mint(SECRET, NOW).token
        key = capability.mac_key(SECRET)
        assert SECRET not in token and len(key) == 32
        assert key != capability.mac_key("N" * 20)
        for encoded in (key.hex(), base64.urlsafe_b64encode(key).decode().rstrip("=")):
            assert encoded not in token

    def test_forged_and_revoked_capabilities_prove_nothing(self) -> None:
        minted = capability.mint(SECRET, NOW)
        _, nonce, issued, mac = minted.token.split(".")
        other = capability.mint(SECRET, NOW)
        forged = [
            f"v2.{other.nonce}.{issued}.{mac}",  # a real MAC on another nonce
            f"v2.{nonce}.{int(issued) + 600}.{mac}",  # the issue time moved: the MAC covers it
            f"v2.{nonce}.{issued}.{'A' * 22}",
            f"v1.{nonce}.{mac}",  # the retired format
            f"v2.{nonce}.{issued}.{mac}x",
            f"v2.{nonce[:-1]}B.{issued}.{mac}",  # not a 16-byte encoding
            capability.mint("another-stack-secret-0001", NOW).token,
            minted.token.replace("v2.", "v2.\ud800", 1),
            SECRET,  # the whole secret, as pre-upgrade URLs carried it
        ]
        auth = authenticator(current_only)
        for token in forged:
            assert auth.verify(token) is None, token
        revoked = CallbackSecrets(current="N" * 20, previous="M" * 20)
        assert authenticator(lambda force: revoked).verify(minted.token) is None

    @pytest.mark.parametrize(
        ("age", "counts"), [(0, True), (1200, True), (1201, False), (-300, True), (-301, False)]
    )
    def test_a_capability_counts_for_its_lifetime_from_its_issue(
        self, age: float, counts: bool
    ) -> None:
        token = capability.mint(SECRET, NOW - age).token
        assert (authenticator(current_only).verify(token) is not None) is counts

    @pytest.mark.parametrize(
        "presented", ["\ud800" * 20, SECRET[:-1] + "\udfff", None, 5, [SECRET], "", "x" * 5000]
    )
    def test_unencodable_or_non_text_paths_prove_nothing(self, presented: object) -> None:
        assert authenticator(current_only).verify(presented) is None


class TestAuthenticator:
    def test_a_miss_refreshes_the_secret_at_most_once_per_interval(self) -> None:
        reads: list[bool] = []
        clock = [100.0]
        rotated = CallbackSecrets(current="N" * 20, previous=SECRET)

        def load(force: bool) -> CallbackSecrets:
            reads.append(force)
            return rotated if force else CallbackSecrets(current=SECRET)

        auth = authenticator(load, refresh_interval_seconds=60, clock=lambda: clock[0])
        assert auth.verify(capability.mint("N" * 20, NOW).token)
        assert reads == [False, True]
        reads.clear()
        forged = capability.mint("F" * 20, NOW).token
        for _ in range(50):
            auth.verify(forged)
        assert reads.count(True) == 0
        clock[0] += 61
        auth.verify(forged)
        assert reads.count(True) == 1

    @pytest.mark.parametrize(
        "document", [None, [], {"current": "short"}, {"current": SECRET, "previous": "bad secret"}]
    )
    def test_malformed_secret_documents_are_refused(self, document: object) -> None:
        with pytest.raises(ValueError, match="secret"):
            CallbackSecrets.from_document(document)


class TestService:
    def setup_method(self) -> None:
        self.store = InMemoryTaskStore()
        self.dlq = FakeDeadLetterQueue()
        self.service = CallbackService(self.store, self.dlq)
        self.store.record_submission(
            NewTask(
                "77",
                token_request("userrecaptcha", "k", "https://a.test"),
                1.0,
                121.0,
                nonce_for("77"),
            )
        )

    def result(
        self, code: str = TOKEN, task_id: str = "77", nonce: str | None = None
    ) -> TaskResult:
        proven = nonce or nonce_for(task_id)
        return parse_callback(request(query={"id": task_id, "code": code}), 10.0, proven)

    def test_another_tasks_capability_is_rejected_and_stores_nothing(self) -> None:
        forged = self.result(nonce=nonce_for("78"))
        assert self.service.receive(forged) is CallbackOutcome.REJECTED
        task = self.store.get("77")
        assert task is not None and task.status is TaskStatus.PENDING

    def test_a_result_for_an_unregistered_id_is_kept_provisionally(self) -> None:
        assert self.service.receive(self.result(task_id="79")) is CallbackOutcome.UNREGISTERED

    def test_given_a_new_result_when_received_then_stored(self) -> None:
        assert self.service.receive(self.result()) is CallbackOutcome.ACCEPTED
        task = self.store.get("77")
        assert task is not None and task.solution == TOKEN

    def test_duplicate_and_conflict(self) -> None:
        self.service.receive(self.result())
        assert self.service.receive(self.result()) is CallbackOutcome.DUPLICATE
        assert self.service.receive(self.result("03AFother" + "z" * 30)) is CallbackOutcome.CONFLICT

    def test_error_code_marks_failed(self) -> None:
        assert (
            self.service.receive(self.result("ERROR_CAPTCHA_UNSOLVABLE"))
            is CallbackOutcome.TASK_FAILED
        )
        task = self.store.get("77")
        assert task is not None and task.status is TaskStatus.FAILED

    def test_given_the_table_down_when_received_then_dead_lettered(self) -> None:
        self.store.fail_next.append(unavailable())
        assert self.service.receive(self.result()) is CallbackOutcome.TO_DEAD_LETTER
        assert [r.task_id for r, _ in self.dlq.sent] == ["77"]
        assert "ProvisionedThroughput" in self.dlq.sent[0][1]

    def test_given_table_and_queue_down_then_not_safe(self) -> None:
        self.store.fail_next.append(unavailable())
        self.dlq.available = False
        with pytest.raises(ResultNotSafeError):
            self.service.receive(self.result())
