"""The one validator of in.php fields, the JSON routes' translation into them, and each kind's
answer parser (which never refuses: a misfit is flagged, the answer kept)."""

from __future__ import annotations

import base64
import json

import pytest

from pingback_guard.domain.task import CaptchaRequest, DeliveryPath, NewTask, Task, TaskResult
from pingback_guard.kinds.fields import MAX_IMAGE_BYTES
from pingback_guard.kinds.json_fields import provider_fields_from_json, request_from_json
from pingback_guard.kinds.registry import (
    KIND_BY_METHOD,
    InvalidFieldError,
    expected_solve_seconds,
    parse_answer,
    parse_provider_fields,
    polled_alone,
)
from pingback_guard.logic.callback import CallbackOutcome, CallbackService
from pingback_guard.logic.poll_schedule import SolveTimes
from pingback_guard.logic.results import JudgedAnswer, judged_answer, stored_request
from pingback_guard.logic.submit import PendingTasks
from tests.fakes import FakeDeadLetterQueue, InMemoryTaskStore, nonce_for

IMAGE = base64.b64encode(b"\x89PNG" + b"\x00" * 400).decode()
PAGE = "https://example.test/login"
VALID_FORMS: dict[str, dict[str, str]] = {
    "userrecaptcha": {"googlekey": "6Le-abc", "pageurl": PAGE, "version": "v3", "min_score": "0.3"},
    "hcaptcha": {"sitekey": "a5f74b19-9e45", "pageurl": PAGE, "data": "rq"},
    "turnstile": {"sitekey": "0x4AAAAAAA", "pageurl": PAGE, "action": "login"},
    "base64": {"body": IMAGE, "phrase": "1", "min_len": "2", "language": "2", "lang": "ru"},
    "post": {"file": IMAGE, "recaptcha": "1", "recaptcharows": "3", "textinstructions": "cats"},
    "geetest": {
        "gt": "f1ab2cdefa3456",
        "challenge": "12345678abc90123d45678ef90123a456b",
        "pageurl": PAGE,
    },
    "cloudflare_challenge": {
        "pageurl": PAGE,
        "userAgent": "Mozilla/5.0",
        "proxy": "login:pass@1.2.3.4:3128",
        "proxytype": "HTTP",
    },
    "bls": {"instructions": "664", **{f"image_base64_{i}": IMAGE for i in range(1, 10)}},
    "captchafox": {
        "sitekey": "sk-fox",
        "pageurl": PAGE,
        "proxy": "login:pass@1.2.3.4:3128",
        "proxytype": "HTTP",
    },
    "friendly_captcha": {"sitekey": "FCMGEMUD2KTDSQ5H", "pageurl": PAGE, "version": "v2"},
    "lemin": {
        "captcha_id": "CROPPED_d3d4d56_73ca4008925b4f83a8bed59c2dd0df6d",
        "div_id": "lemin-cropped-captcha",
        "pageurl": PAGE,
        "apiServer": "api.leminnow.com",
    },
}


@pytest.mark.parametrize("method", sorted(VALID_FORMS))
def test_every_kind_takes_its_in_php_form(method: str) -> None:
    request = parse_provider_fields(
        {"method": method, "key": "k", "json": "1", **VALID_FORMS[method]}
    )
    assert request.method == method and request.fields == VALID_FORMS[method]


def test_every_method_of_the_registry_has_a_valid_form_here() -> None:
    assert set(KIND_BY_METHOD) == set(VALID_FORMS)


@pytest.mark.parametrize(
    ("method", "secret"),
    [
        ("base64", "body"),
        ("post", "file"),
        ("bls", "image_base64_1"),
        ("cloudflare_challenge", "proxy"),
    ],
)
def test_secrets_are_sent_never_kept(method: str, secret: str) -> None:
    request = parse_provider_fields({"method": method, **VALID_FORMS[method]})
    assert secret in request.fields and secret not in request.without_secrets().fields
    assert request.fields[secret] not in str(request.without_secrets().to_document())


def test_a_registered_task_needs_no_secrets() -> None:
    form = {"method": "base64", "phrase": "1"}
    with pytest.raises(InvalidFieldError, match="body is required"):
        parse_provider_fields(form)
    assert parse_provider_fields(form, secrets_sent=False).fields == {"phrase": "1"}


@pytest.mark.parametrize(
    ("form", "field", "reason"),
    [
        ({"method": "nope"}, "method", "method must be one of base64, bls, captchafox"),
        ({}, "method", "method must be one of"),
        (
            {"method": "turnstile", "sitekey": "0x4", "pageurl": PAGE, "score": "1"},
            "score",
            "score is not a field of method turnstile; allowed: method, action, data",
        ),
        (
            {"method": "turnstile", "sitekey": "0x4", "pageurl": "ftp://x"},
            "pageurl",
            "pageurl must be an http(s) URL",
        ),
        ({"method": "turnstile", "sitekey": "0x4"}, "pageurl", "pageurl is required for turnstile"),
        ({"method": "base64", "body": "not base64!"}, "body", "body must be a base64 image"),
        ({"method": "base64", "body": base64.b64encode(b"x" * 50).decode()}, "body", "100 bytes"),
        ({"method": "base64", "body": IMAGE, "numeric": "7"}, "numeric", "0 to 4"),
        ({"method": "base64", "body": IMAGE, "min_len": "x"}, "min_len", "whole number"),
        ({"method": "geetest", "gt": "abc", "pageurl": PAGE}, "challenge", "challenge is required"),
        ({"method": "geetest", "version": "4", "pageurl": PAGE}, "captcha_id", "v4"),
        ({"method": "cloudflare_challenge", "pageurl": PAGE}, "proxy", "proxy is required"),
        ({"method": "captchafox", "sitekey": "k", "pageurl": PAGE}, "proxy", "proxy is required"),
        (
            {"method": "friendly_captcha", "sitekey": "k", "pageurl": PAGE, "version": "v3"},
            "version",
            "v1 or v2",
        ),
        (
            {"method": "userrecaptcha", "googlekey": "k", "pageurl": PAGE, "min_score": "2"},
            "min_score",
            "0.1 to 0.9",
        ),
        (
            {"method": "userrecaptcha", "googlekey": "k", "pageurl": PAGE, "action": "a" * 300},
            "action",
            "at most 256 bytes",
        ),
        (
            {"method": "userrecaptcha", "googlekey": "k", "pageurl": PAGE, "x" * 100: "1"},
            "a field",
            "a field is not a field",
        ),
    ],
)
def test_a_refusal_names_the_field(form: dict[str, str], field: str, reason: str) -> None:
    with pytest.raises(InvalidFieldError) as refused:
        parse_provider_fields(form)
    assert refused.value.field == field and reason in refused.value.reason


def test_an_image_over_the_bound_is_refused_by_its_size() -> None:
    too_big = base64.b64encode(b"\x00" * (MAX_IMAGE_BYTES + 1)).decode()
    with pytest.raises(InvalidFieldError, match="body must be"):
        parse_provider_fields({"method": "base64", "body": too_big})


class TestJsonRoutes:
    def test_todays_shape_becomes_provider_fields(self) -> None:
        document = {
            "method": "userrecaptcha",
            "sitekey": "6Le-abc",
            "page_url": PAGE,
            "extras": {"version": "v3", "min_score": 0.7, "invisible": True},
        }
        assert provider_fields_from_json(document) == {
            "method": "userrecaptcha",
            "googlekey": "6Le-abc",
            "pageurl": PAGE,
            "version": "v3",
            "min_score": "0.7",
            "invisible": "1",
        }

    def test_the_2captcha_sdk_names_are_read_as_what_they_stand_for(self) -> None:
        document = {
            "method": "turnstile",
            "sitekey": "0x4AAAAAAA",
            "url": PAGE,
            "proxy": {"type": "HTTPS", "uri": "login:password@1.2.3.4:8080"},
        }
        request = request_from_json(document)
        assert request.fields == {
            "sitekey": "0x4AAAAAAA",
            "pageurl": PAGE,
            "proxytype": "HTTPS",
            "proxy": "login:password@1.2.3.4:8080",
        }
        recaptcha = request_from_json(
            {"sitekey": "6Le-abc", "url": PAGE, "version": "v3", "score": 0.5}
        )
        assert recaptcha.fields["min_score"] == "0.5"
        image = request_from_json({"method": "base64", "body": IMAGE, "minLen": 4, "maxLen": 6})
        assert (image.fields["min_len"], image.fields["max_len"]) == ("4", "6")

    @pytest.mark.parametrize(
        ("document", "field"),
        [
            ([], "body"),
            ({"extras": "v3"}, "extras"),
            ({"sitekey": "k", "page_url": PAGE, "extras": {"action": ["x"]}}, "action"),
            ({"sitekey": "k", "page_url": PAGE, "extras": {"action": 10**5000}}, "action"),
            ({"sitekey": "k", "url": PAGE, "page_url": PAGE}, "pageurl"),
            (
                {"method": "turnstile", "sitekey": "0x4", "url": PAGE, "proxy": {"type": "HTTP"}},
                "proxy",
            ),
        ],
    )
    def test_bad_documents_name_the_field(self, document: object, field: str) -> None:
        with pytest.raises(InvalidFieldError) as refused:
            request_from_json(document)
        assert refused.value.field == field


class TestAnswers:
    @pytest.mark.parametrize(
        ("method", "raw", "parsed"),
        [
            ("base64", "two words", {"type": "text", "text": "two words"}),
            ("base64", "привет", {"type": "text", "text": "привет"}),
            ("post", "click:1/4/6", {"type": "grid", "cells": [1, 4, 6]}),
            (
                "base64",
                "coordinates:x=39,y=59;x=252,y=72",
                {"type": "coordinates", "points": [{"x": 39, "y": 59}, {"x": 252, "y": 72}]},
            ),
            ("bls", "[1, 4, 7]", {"cells": [1, 4, 7]}),
            ("turnstile", "0.AbC-_x", {"token": "0.AbC-_x"}),
        ],
    )
    def test_answers_are_parsed_for_the_worker(
        self, method: str, raw: str, parsed: dict[str, object]
    ) -> None:
        answer = parse_answer(parse_provider_fields({"method": method, **VALID_FORMS[method]}), raw)
        assert answer.fields == parsed and answer.fits

    def test_geetest_answers_become_fields_and_v3_seccode_keeps_its_pipe(self) -> None:
        request = CaptchaRequest("geetest", VALID_FORMS["geetest"])
        raw = '{"challenge":"1a2b","validate":"9f8e","seccode":"9f8e|jordan"}'
        answer = parse_answer(request, raw)
        assert answer.fits and answer.fields["seccode"] == "9f8e|jordan"
        v4 = CaptchaRequest("geetest", {"captcha_id": "e392", "version": "4", "pageurl": PAGE})
        raw4 = (
            '{"captcha_id":"e392","lot_number":"7b","pass_token":"bd","gen_time":"1693",'
            '"captcha_output":"Ww=="}'
        )
        assert parse_answer(v4, raw4).fits and parse_answer(v4, raw4).fields["lot_number"] == "7b"

    @pytest.mark.parametrize(
        ("method", "raw"),
        [
            ("geetest", "not json"),
            ("geetest", '{"challenge":"x"}'),
            ("bls", "[0, 12]"),
            ("post", "click:a/b"),
            ("base64", "coordinates:x=1"),
            ("userrecaptcha", "token with spaces"),
        ],
    )
    def test_a_misfit_is_flagged_and_the_raw_answer_stays(self, method: str, raw: str) -> None:
        request = CaptchaRequest(method, {})
        answer = parse_answer(request, raw)
        assert not answer.fits and raw in answer.fields.values()

    def test_cloudflare_clearance_carries_its_user_agent(self) -> None:
        request = CaptchaRequest(
            "cloudflare_challenge", {"userAgent": "Mozilla/5.0", "pageurl": PAGE}
        )
        answer = parse_answer(request, "cf-clearance.value-123")
        assert answer.fields == {
            "cf_clearance": "cf-clearance.value-123",
            "user_agent": "Mozilla/5.0",
        }


@pytest.mark.parametrize(
    ("method", "alone"),
    [
        ("userrecaptcha", False),
        ("hcaptcha", False),
        ("turnstile", False),
        ("bls", False),
        ("cloudflare_challenge", False),
        ("geetest", True),
        ("base64", True),
        ("post", True),
        (None, True),
    ],
)
def test_kinds_whose_answers_may_hold_a_pipe_are_polled_alone(
    method: str | None, alone: bool
) -> None:
    assert polled_alone(method) is alone


def test_requests_stored_before_provider_fields_are_read_as_provider_fields() -> None:
    """Items and dead letters written before kinds held sitekey/page_url/extras."""
    old = {
        "method": "userrecaptcha",
        "sitekey": "6Le-abc",
        "page_url": PAGE,
        "extras": {"version": "v3"},
    }
    request = CaptchaRequest.from_document(old)
    assert request == CaptchaRequest(
        "userrecaptcha", {"googlekey": "6Le-abc", "pageurl": PAGE, "version": "v3"}
    )
    assert CaptchaRequest.from_document(request.to_document()) == request
    turnstile = {"method": "turnstile", "sitekey": "0x4", "page_url": PAGE}
    assert CaptchaRequest.from_document(turnstile).fields == {"sitekey": "0x4", "pageurl": PAGE}


def test_a_stored_answer_is_judged_against_its_tasks_kind() -> None:
    """Given a GeeTest task, when its stored answer is not JSON, then it is flagged (the answer
    itself stays as sent); a task the table does not know is never flagged."""
    store = InMemoryTaskStore()
    request = CaptchaRequest("geetest", VALID_FORMS["geetest"])
    store.record_submission(NewTask("5", request, 1000.0, 1020.0))
    misfit = TaskResult("5", "not json", DeliveryPath.POLL, 1010.0)
    recorded = store.record_solution(misfit)
    judged = judged_answer(stored_request(recorded), misfit)
    assert (judged.kind, judged.parsed.fits, judged.parsed.fields) == (
        "geetest",
        False,
        {"text": "not json"},
    )
    unknown = judged_answer(None, TaskResult("6", "x y", DeliveryPath.CALLBACK, 1010.0))
    assert (unknown.kind, unknown.parsed.fits) == (None, True)


@pytest.mark.parametrize("method", ["userrecaptcha", "base64", "geetest", None])
def test_an_answer_shaped_like_an_unknown_provider_error_fits_no_kind(method: str | None) -> None:
    """Kept as the answer (a pingback comes once), but flagged, whatever the kind."""
    request = CaptchaRequest(method, VALID_FORMS[method]) if method else None
    parsed = parse_answer(request, "ERROR_SOMETHING_NEW")
    assert parsed.fits is False
    assert "ERROR_SOMETHING_NEW" in json.dumps(parsed.fields)


class UnreadableTable(InMemoryTaskStore):
    """Writes work; any read of a task fails the test."""

    def get(self, task_id: str) -> Task | None:
        raise AssertionError(f"read task {task_id}")


def test_a_pingbacks_answer_is_judged_from_the_write_that_stored_it() -> None:
    """Given a GeeTest task, when its pingback stores an answer that is not JSON, then the
    callback path flags it from the task its storing write handed back: no read of the table."""
    store = UnreadableTable()
    geetest = CaptchaRequest("geetest", VALID_FORMS["geetest"])
    store.record_submission(NewTask("8", geetest, 1000.0, 1020.0, nonce=nonce_for("8")))
    judged: list[JudgedAnswer] = []
    service = CallbackService(
        store,
        FakeDeadLetterQueue(),
        on_token_stored=lambda result, request: judged.append(judged_answer(request, result)),
    )
    pingback = TaskResult("8", "not json", DeliveryPath.CALLBACK, 1010.0, nonce=nonce_for("8"))
    assert service.receive(pingback) is CallbackOutcome.ACCEPTED
    assert service.receive(pingback) is CallbackOutcome.DUPLICATE  # judged once, when stored
    assert [(answer.kind, answer.parsed.fits) for answer in judged] == [("geetest", False)]


def test_first_looks_come_just_after_each_kinds_first_check() -> None:
    """Images are read in seconds, browser tokens in tens of seconds (ExpectedSolveSeconds);
    learned per method once enough are seen. The stack's own first check comes at half that,
    and the worker's first look a second after it."""
    solve_times = SolveTimes(default_seconds=20.0)
    assert expected_solve_seconds("base64", 20.0) == 8.0
    assert expected_solve_seconds("bls", 20.0) == 6.0
    assert expected_solve_seconds("turnstile", 20.0) == 20.0
    pending = PendingTasks(callback_timeout_seconds=60.0, clock=lambda: 1000.0)
    image = pending.new("1", CaptchaRequest("base64", {"phrase": "1"}), None, None)
    token = pending.new("2", CaptchaRequest("turnstile", {"sitekey": "0x4"}), None, None)
    assert (pending.first_look_at(image), pending.first_look_at(token)) == (1006.0, 1011.0)
    assert (image.first_poll_at, token.first_poll_at) == (1005.0, 1010.0)  # 2captcha: 5 s
    for _ in range(20):
        solve_times.observe("base64", 3.0)
    assert solve_times.first_check("base64") == 5.0  # never before the provider's 5 s
