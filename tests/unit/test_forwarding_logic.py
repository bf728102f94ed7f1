"""The worker's own pingback: only its task's result, in 2captcha's words, retried on failure."""

from __future__ import annotations

import pytest

from pingback_guard.domain.errors import ForwardFailedError
from pingback_guard.domain.task import CaptchaRequest, DeliveryPath, NewTask, TaskResult
from pingback_guard.logic.forwarding import ForwardOutcome, ResultForwarder, is_forwardable_url
from tests.fakes import InMemoryTaskStore

TASK = "72000000001"
FORWARD_URL = "https://worker.example/pingback"
OWNER = "arn:aws:iam::123456789012:user/worker"
REQUEST = CaptchaRequest("hcaptcha", {"sitekey": "k", "pageurl": "https://example.test/"})


class RecordingSender:
    def __init__(self, failure: Exception | None = None) -> None:
        self.sent: list[tuple[str, str, str]] = []
        self.failure = failure

    def send(self, url: str, task_id: str, code: str) -> None:
        if self.failure is not None:
            raise self.failure
        self.sent.append((url, task_id, code))


def store_with(forward_url: str | None) -> InMemoryTaskStore:
    store = InMemoryTaskStore()
    store.record_submission(
        NewTask(
            TASK, REQUEST, 1000.0, 1020.0, owner="arn:aws:iam::1:user/w", forward_url=forward_url
        )
    )
    return store


def test_a_solved_task_s_token_goes_to_its_own_url() -> None:
    store, sender = store_with(FORWARD_URL), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    assert (
        ResultForwarder(store, sender, allow_loopback=False).forward(TASK, 1031.0)
        is ForwardOutcome.SENT
    )
    assert sender.sent == [(FORWARD_URL, TASK, "P1_token")]


def test_a_failed_task_sends_the_provider_s_error() -> None:
    store, sender = store_with(FORWARD_URL), RecordingSender()
    store.record_failure(TaskResult(TASK, "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.POLL, 1030.0))
    ResultForwarder(store, sender, allow_loopback=False).forward(TASK, 1031.0)
    assert sender.sent == [(FORWARD_URL, TASK, "ERROR_CAPTCHA_UNSOLVABLE")]


@pytest.mark.parametrize("forward_url", [None, FORWARD_URL])
def test_nothing_is_sent_without_a_url_or_before_a_result(forward_url: str | None) -> None:
    store, sender = store_with(forward_url), RecordingSender()
    if forward_url is None:
        store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    outcome = ResultForwarder(store, sender, allow_loopback=False).forward(TASK, 1031.0)
    assert outcome is ForwardOutcome.NOTHING_TO_FORWARD and sender.sent == []
    assert (
        ResultForwarder(store, sender, allow_loopback=False).forward("1", 1031.0)
        is ForwardOutcome.NOTHING_TO_FORWARD
    )


def test_a_refused_forward_is_raised_for_the_retry() -> None:
    store = store_with(FORWARD_URL)
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    with pytest.raises(ForwardFailedError):
        ResultForwarder(
            store, RecordingSender(ForwardFailedError("forward: HTTP 500")), allow_loopback=False
        ).forward(TASK, 1031.0)


@pytest.mark.parametrize(
    ("url", "allowed", "allowed_locally"),
    [
        ("https://worker.example/p?x=1", True, True),
        ("http://127.0.0.1:8080/p", False, True),
        # In Lambda, loopback is the function's own Runtime API.
        ("http://127.0.0.1:9001/2018-06-01/runtime/invocation/next", False, True),
        ("https://localhost/p", False, True),
        ("http://worker.example/p", False, False),
        ("https://user:pw@worker.example/p", False, False),
        ("file:///etc/passwd", False, False),
        ("https://worker.example/" + "a" * 2100, False, False),
        ("https://worker.example/\n", False, False),
    ],
)
def test_only_urls_the_stack_may_call(url: str, allowed: bool, allowed_locally: bool) -> None:
    assert is_forwardable_url(url, allow_loopback=False) is allowed
    assert is_forwardable_url(url, allow_loopback=True) is allowed_locally


def test_a_loopback_url_kept_before_is_not_called_on_aws() -> None:
    store, sender = store_with("http://127.0.0.1:9001/x"), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    forwarder = ResultForwarder(store, sender, allow_loopback=False)
    assert forwarder.forward(TASK, 1031.0) is ForwardOutcome.NOTHING_TO_FORWARD
    assert sender.sent == []
