"""CaptchaAiClient against scripted HTTP answers (a requests transport adapter: no network)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter

from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderBatchRefusedError,
    ProviderRejectedError,
    ProviderRetryableError,
)
from pingback_guard.provider.answers import TWOCAPTCHA, AnswerKind
from pingback_guard.provider.captchaai import CaptchaAiClient, RetryPolicy
from pingback_guard.provider.configured_client import pooled_session
from tests.fakes import ODD_BUT_REAL_ANSWERS, token_request

API_KEY = "0123456789abcdef0123456789abcdef"
TOKEN = "03AFcWeA5" + "Q" * 700
Answer = Callable[[requests.PreparedRequest], requests.Response] | BaseException


def reply(
    body: object, status: int = 200
) -> Callable[[requests.PreparedRequest], requests.Response]:
    def build(prepared: requests.PreparedRequest) -> requests.Response:
        response = requests.Response()
        response.status_code = status
        response._content = (body if isinstance(body, str) else json.dumps(body)).encode()
        response.request = prepared
        response.url = prepared.url or ""
        return response

    return build


class ScriptedTransport(BaseAdapter):
    def __init__(self, answers: list[Answer]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.sent: list[requests.PreparedRequest] = []
        self.timeouts: list[Any] = []

    def send(  # type: ignore[override]  # the transport takes requests' keywords as a bag
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        self.sent.append(request)
        self.timeouts.append(kwargs.get("timeout"))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer(request)

    def close(self) -> None:
        return None

    def fields(self, index: int) -> dict[str, str]:
        sent = self.sent[index]
        raw = sent.body if sent.method == "POST" else urlsplit(sent.url or "").query
        text = raw.decode() if isinstance(raw, bytes) else str(raw or "")
        return {key: values[0] for key, values in parse_qs(text).items()}


def client_with(answers: list[Answer], **options: Any) -> tuple[CaptchaAiClient, ScriptedTransport]:
    transport = ScriptedTransport(answers)
    session = requests.Session()
    session.mount("https://", transport)
    client = CaptchaAiClient(
        "https://ocr.captchaai.test",
        lambda: API_KEY,
        session=session,
        **{
            "sleep": lambda _: None,
            "retry": RetryPolicy(attempts=3, backoff_seconds=0.01),
            **options,
        },
    )
    return client, transport


RECAPTCHA = token_request(
    "userrecaptcha",
    "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "https://example.test/login",
    {"version": "v3", "action": "login", "min_score": "0.7"},
)


class TestSubmit:
    def test_posts_every_field_and_normalises_a_numeric_id(self) -> None:
        client, transport = client_with([reply({"status": 1, "request": 73612345678})])
        task_id = client.submit(RECAPTCHA, "https://api.test/callback/s3cr3t?x=1")
        assert task_id == "73612345678"
        sent = transport.sent[0]
        assert sent.method == "POST" and sent.url == "https://ocr.captchaai.test/in.php"
        assert transport.fields(0) == {
            "key": API_KEY,
            "method": "userrecaptcha",
            "googlekey": RECAPTCHA.fields["googlekey"],
            "pageurl": RECAPTCHA.fields["pageurl"],
            "pingback": "https://api.test/callback/s3cr3t?x=1",
            "json": "1",
            "version": "v3",
            "action": "login",
            "min_score": "0.7",
        }
        assert transport.timeouts[0] == (3.05, 10.0)

    @pytest.mark.parametrize("method", ["hcaptcha", "turnstile"])
    def test_other_methods_send_sitekey(self, method: str) -> None:
        client, transport = client_with([reply({"status": 1, "request": "1234"})])
        client.submit(token_request(method, "abc-123", "https://example.test"), "https://cb.test")
        assert transport.fields(0)["sitekey"] == "abc-123"
        assert "googlekey" not in transport.fields(0)

    def test_no_slot_is_retried_then_succeeds(self) -> None:
        client, transport = client_with(
            [
                reply({"status": 0, "request": "ERROR_NO_SLOT_AVAILABLE"}),
                reply({"status": 1, "request": "55"}),
            ]
        )
        assert client.submit(RECAPTCHA, "https://cb.test") == "55"
        assert len(transport.sent) == 2

    def test_refused_connection_is_retried(self) -> None:
        refused = requests.ConnectionError("NewConnectionError: Connection refused")
        client, _ = client_with([refused, reply({"status": 1, "request": "56"})])
        assert client.submit(RECAPTCHA, "https://cb.test") == "56"

    def test_read_timeout_is_not_resent_because_the_task_may_exist(self) -> None:
        client, transport = client_with([requests.ReadTimeout("read timed out")])
        with pytest.raises(ProviderRetryableError) as raised:
            client.submit(RECAPTCHA, "https://cb.test")
        assert raised.value.resend_is_safe is False
        assert len(transport.sent) == 1

    @pytest.mark.parametrize("code", ["ERROR_PAGEURL", "ERROR_GOOGLEKEY", "ERROR_BAD_PARAMETERS"])
    def test_permanent_errors_are_rejections(self, code: str) -> None:
        client, _ = client_with([reply({"status": 0, "request": code})])
        with pytest.raises(ProviderRejectedError, match=code):
            client.submit(RECAPTCHA, "https://cb.test")

    @pytest.mark.parametrize(
        "code",
        [
            "ERROR_WRONG_USER_KEY",
            "ERROR_KEY_DOES_NOT_EXIST",
            "ERROR_IP_NOT_ALLOWED",
        ],
    )
    def test_account_errors_stop_at_once(self, code: str) -> None:
        client, transport = client_with([reply({"status": 0, "request": code})])
        with pytest.raises(ProviderAccountError, match=code):
            client.submit(RECAPTCHA, "https://cb.test")
        assert len(transport.sent) == 1

    def test_malformed_id_is_retryable(self) -> None:
        client, _ = client_with([reply({"status": 1, "request": "not-an-id"})] * 3)
        with pytest.raises(ProviderRetryableError):
            client.submit(RECAPTCHA, "https://cb.test")

    def test_plain_text_answer_is_understood(self) -> None:
        client, _ = client_with([reply("OK|98765")])
        assert client.submit(RECAPTCHA, "https://cb.test") == "98765"


class TestGetResults:
    def test_single_id_ready(self) -> None:
        client, transport = client_with([reply({"status": 1, "request": TOKEN})])
        answers = client.get_results(["11"])
        assert answers["11"].kind is AnswerKind.READY and answers["11"].value == TOKEN
        query = transport.fields(0)
        assert query == {"key": API_KEY, "json": "1", "action": "get", "id": "11"}
        assert transport.sent[0].method == "GET"

    def test_batch_uses_ids_and_keeps_order(self) -> None:
        client, transport = client_with(
            [reply({"status": 1, "request": f"{TOKEN}|CAPCHA_NOT_READY|ERROR_CAPTCHA_UNSOLVABLE"})]
        )
        answers = client.get_results(["1", "2", "3"])
        assert transport.fields(0)["ids"] == "1,2,3"
        assert [answers[i].kind for i in "123"] == [
            AnswerKind.READY,
            AnswerKind.NOT_READY,
            AnswerKind.TASK_FAILED,
        ]

    def test_all_not_ready_batch_answer(self) -> None:
        client, _ = client_with([reply({"status": 0, "request": "CAPCHA_NOT_READY"})])
        assert {a.kind for a in client.get_results(["1", "2"]).values()} == {AnswerKind.NOT_READY}

    def test_an_odd_ids_answer_is_a_batch_refusal_after_exactly_one_request(self) -> None:
        client, transport = client_with([reply({"status": 0, "request": "ERROR_BAD_PARAMETERS"})])
        with pytest.raises(ProviderBatchRefusedError):
            client.get_results(["1", "2"])
        assert len(transport.sent) == 1 and "ids" in transport.fields(0)

    def test_one_id_is_asked_with_id(self) -> None:
        client, transport = client_with([reply({"status": 0, "request": "CAPCHA_NOT_READY"})])
        client.get_results(["1"])
        assert transport.fields(0)["id"] == "1" and "ids" not in transport.fields(0)

    def test_a_server_error_is_one_request_and_not_retried_here(self) -> None:
        client, transport = client_with([reply("oops", 502)])
        with pytest.raises(ProviderRetryableError):
            client.get_results(["9"])
        assert len(transport.sent) == 1

    @pytest.mark.parametrize("status", [301, 302, 307, 308])
    def test_redirects_are_never_followed(self, status: int) -> None:
        client, transport = client_with([reply("", status)])
        with pytest.raises(ProviderRetryableError):
            client.get_results(["9"])
        assert len(transport.sent) == 1

    def test_timeouts_exhaust_into_a_retryable_error_without_the_key(self) -> None:
        client, _ = client_with([requests.ReadTimeout(f"https://x/res.php?key={API_KEY}")])
        with pytest.raises(ProviderRetryableError) as raised:
            client.get_results(["9"])
        assert API_KEY not in str(raised.value) and raised.value.__cause__ is None

    def test_account_error_raises(self) -> None:
        client, _ = client_with([reply({"status": 0, "request": "ERROR_ZERO_BALANCE"})])
        with pytest.raises(ProviderAccountError):
            client.get_results(["1", "2"])

    @pytest.mark.parametrize("body", ["<html>bad gateway</html>", "", '{"unexpected": true}'])
    def test_malformed_answers_are_retryable(self, body: str) -> None:
        client, _ = client_with([reply(body)] * 3)
        with pytest.raises(ProviderRetryableError):
            client.get_results(["1"])

    def test_status_zero_never_yields_a_token(self) -> None:
        client, _ = client_with([reply({"status": 0, "request": "SOMETHING_ODD_BUT_TOKEN_SHAPED"})])
        assert client.get_results(["1"])["1"].kind is AnswerKind.RETRYABLE

    def test_permanent_task_error_for_one_id(self) -> None:
        client, _ = client_with([reply({"status": 0, "request": "ERROR_WRONG_CAPTCHA_ID"})])
        assert client.get_results(["1"])["1"].kind is AnswerKind.TASK_PERMANENT


class TestReportAndBalance:
    def test_reportbad(self) -> None:
        client, transport = client_with([reply({"status": 1, "request": "OK_REPORT_RECORDED"})])
        client.report("42", good=False)
        assert transport.fields(0)["action"] == "reportbad"

    @pytest.mark.parametrize(
        "answer",
        [
            reply("busy", 503),
            reply("slow down", 429),
            requests.ReadTimeout("read timed out"),
            reply({"status": 0, "request": "ERROR_DUPLICATE_REPORT"}),
        ],
    )
    def test_a_report_is_one_request_and_says_it_may_have_arrived(self, answer: Answer) -> None:
        # A retry (three attempts before issue 39) sent one task's report up to three times.
        client, transport = client_with([answer, reply({"status": 1, "request": "OK"})] * 2)
        with pytest.raises(ProviderRetryableError) as raised:
            client.report("42", good=False)
        assert len(transport.sent) == 1
        assert raised.value.code or raised.value.resend_is_safe is False

    def test_a_report_that_could_not_connect_says_it_never_left(self) -> None:
        refused = requests.ConnectionError("NewConnectionError: Connection refused")
        client, transport = client_with([refused, reply({"status": 1, "request": "OK"})])
        with pytest.raises(ProviderRetryableError) as raised:
            client.report("42", good=True)
        assert raised.value.resend_is_safe is True and len(transport.sent) == 1

    def test_balance(self) -> None:
        client, _ = client_with([reply({"status": 1, "request": "12.345"})])
        assert client.balance() == pytest.approx(12.345)

    def test_balance_with_wrong_key(self) -> None:
        client, _ = client_with([reply({"status": 0, "request": "ERROR_WRONG_USER_KEY"})])
        with pytest.raises(ProviderAccountError):
            client.balance()


class TestAnswersOfEveryShape:
    @pytest.mark.parametrize(
        "answer",
        ODD_BUT_REAL_ANSWERS,
    )
    def test_a_ready_answer_is_returned_exactly_as_sent(self, answer: str) -> None:
        client, _ = client_with([reply({"status": 1, "request": answer})])
        got = client.get_results(["11"])["11"]
        assert (got.kind, got.value) == (AnswerKind.READY, answer)

    def test_a_batch_whose_parts_do_not_match_its_ids_is_refused_whole(self) -> None:
        client, _ = client_with([reply({"status": 1, "request": f"{TOKEN}|a|b"})])
        with pytest.raises(ProviderBatchRefusedError):
            client.get_results(["1", "2"])


def test_an_answer_sent_as_a_json_object_is_kept_as_its_json_text() -> None:
    geetest = {"geetest_challenge": "1a", "geetest_validate": "2b", "geetest_seccode": "2b|jordan"}
    client, _ = client_with([reply({"status": 1, "request": geetest})])
    got = client.get_results(["11"])["11"]
    assert got.kind is AnswerKind.READY and json.loads(got.value) == geetest


def test_the_pollers_session_keeps_a_connection_for_each_request_in_flight() -> None:
    """requests keeps 10 connections a host by default: a poller with 64 requests in flight
    would open and drop a connection (a TLS handshake) for each one beyond them."""
    adapter = pooled_session(64).get_adapter("https://ocr.captchaai.com/res.php")
    assert adapter.poolmanager.connection_pool_kw["maxsize"] == 64  # type: ignore[attr-defined]


class TestCaptchaAiDialect:
    """CaptchaAI's own readings (captchaai 1.0.1: core/orchestrator.py, core/registry.py)."""

    def test_zero_balance_with_every_thread_busy_is_busy_and_retried(self) -> None:
        busy = reply({"threads": 5, "working_threads": 5})
        refused = reply({"status": 0, "request": "ERROR_ZERO_BALANCE"})
        client, transport = client_with([refused, busy, reply({"status": 1, "request": "77"})])
        assert client.submit(RECAPTCHA, "https://cb.test") == "77"
        assert transport.fields(1)["action"] == "threadsinfo"

    def test_zero_balance_twice_with_free_threads_is_the_account_s_error(self) -> None:
        free = reply({"threads": 5, "working_threads": 1})
        refused = reply({"status": 0, "request": "ERROR_ZERO_BALANCE"})
        client, transport = client_with([refused, free, refused, free])
        with pytest.raises(ProviderAccountError, match="ERROR_ZERO_BALANCE"):
            client.submit(RECAPTCHA, "https://cb.test")
        assert len(transport.sent) == 4

    def test_a_thread_freed_between_the_refusal_and_threadsinfo_is_not_an_account_error(
        self,
    ) -> None:
        # Given a full plan refusing, and a thread that frees before threadsinfo is read
        freed = reply({"threads": 5, "working_threads": 4})
        refused = reply({"status": 0, "request": "ERROR_ZERO_BALANCE"})
        client, _ = client_with([refused, freed, reply({"status": 1, "request": "78"})])
        # When the submit goes on, Then it is sent again and accepted
        assert client.submit(RECAPTCHA, "https://cb.test") == "78"

    def test_a_single_attempt_reads_free_threads_as_the_account_s_error_at_once(self) -> None:
        free = reply({"threads": 5, "working_threads": 1})
        refused = reply({"status": 0, "request": "ERROR_ZERO_BALANCE"})
        client, transport = client_with([refused, free], retry=RetryPolicy(attempts=1))
        with pytest.raises(ProviderAccountError):
            client.submit(RECAPTCHA, "https://cb.test")
        assert len(transport.sent) == 2

    def test_a_2captcha_account_reads_zero_balance_as_the_account_s_error_at_once(self) -> None:
        client, transport = client_with(
            [reply({"status": 0, "request": "ERROR_ZERO_BALANCE"})], codes=TWOCAPTCHA
        )
        with pytest.raises(ProviderAccountError):
            client.submit(RECAPTCHA, "https://cb.test")
        assert len(transport.sent) == 1

    def test_an_answer_in_result_comes_with_its_user_agent(self) -> None:
        body = {"status": 1, "request": "", "result": TOKEN, "user_agent": "Mozilla/5.0 X"}
        client, _ = client_with([reply(body)])
        answer = client.get_results(["11"])["11"]
        assert (answer.kind, answer.value, answer.user_agent) == (
            AnswerKind.READY,
            TOKEN,
            "Mozilla/5.0 X",
        )

    @pytest.mark.parametrize(
        ("request_value", "text"),
        [
            ([1, 4, 7], "[1,4,7]"),
            (
                {"answer": "0xabc", "challenge_uuid": "u-1"},
                '{"answer":"0xabc","challenge_uuid":"u-1"}',
            ),
        ],
    )
    def test_json_lists_and_objects_are_kept_as_their_text(
        self, request_value: object, text: str
    ) -> None:
        client, _ = client_with([reply({"status": 1, "request": request_value})])
        assert client.get_results(["11"])["11"].value == text

    def test_a_solved_answer_it_cannot_read_is_unreadable_not_not_ready(self) -> None:
        client, _ = client_with([reply({"status": 1, "request": ""})])
        assert client.get_results(["11"])["11"].kind is AnswerKind.UNREADABLE

    def test_threadsinfo_reads_the_counts(self) -> None:
        client, transport = client_with([reply({"threads": 10, "working_threads": 3})])
        usage = client.threads_info()
        assert (usage.threads, usage.working_threads, usage.is_full) == (10, 3, False)
        assert transport.sent[0].method == "POST"
