from __future__ import annotations

import pytest

from pingback_guard.domain.errors import (
    ProviderRejectedError,
    StoreError,
    StoreUnavailableError,
    TaskNotRecordedError,
)
from pingback_guard.domain.task import CaptchaRequest, DeliveryPath, TaskResult, TaskStatus
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.kinds.registry import InvalidFieldError
from pingback_guard.logic.submit import (
    IssuedPingback,
    PendingTasks,
    SubmitService,
    issue_pingback,
    pingback_url,
)
from tests.fakes import (
    FakeDeadLetterQueue,
    FakeProvider,
    InMemoryTaskStore,
    nonce_for,
    unavailable,
)

OWNER = "arn:aws:iam::123456789012:user/worker"
PINGBACK = IssuedPingback(nonce_for("x"), f"https://cb.test/callback/v1.{nonce_for('x')}.mac")

VALID = {
    "method": "userrecaptcha",
    "sitekey": "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
    "page_url": "https://example.test/login",
    "extras": {"version": "v3", "min_score": 0.3, "invisible": True},
}


def test_valid_submission_is_parsed() -> None:
    request = request_from_json(VALID)
    assert request.method == "userrecaptcha"
    assert request.fields == {
        "googlekey": VALID["sitekey"],
        "pageurl": VALID["page_url"],
        "version": "v3",
        "min_score": "0.3",
        "invisible": "1",
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"method": "image"}, "method"),
        ({"sitekey": ""}, "googlekey"),
        ({"sitekey": "a b"}, "googlekey"),
        ({"page_url": "ftp://x"}, "pageurl"),
        ({"page_url": "https://" + "a" * 3000}, "pageurl"),
        ({"extras": {"steal": "x"}}, "steal is not a field of method userrecaptcha; allowed: "),
        ({"extras": {"action": ["x"]}}, "action"),
        ({"extras": "v3"}, "object"),
    ],
)
def test_bad_submissions_are_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidFieldError, match=message):
        request_from_json({**VALID, **change})


def test_body_must_be_an_object() -> None:
    with pytest.raises(InvalidFieldError):
        request_from_json(["x"])


def test_pingback_url() -> None:
    assert (
        pingback_url("https://abc.execute-api.test/", "S" * 20)
        == "https://abc.execute-api.test/callback/" + "S" * 20
    )


def service(
    store: InMemoryTaskStore,
    provider: FakeProvider | None = None,
    dlq: FakeDeadLetterQueue | None = None,
) -> SubmitService:
    return SubmitService(
        store,
        provider or FakeProvider(),
        dlq or FakeDeadLetterQueue(),
        PendingTasks(120, clock=lambda: 1000.0),
        sleep=lambda _: None,
    )


def test_a_submission_is_first_checked_early_and_its_worker_told_to_look_just_after() -> None:
    # Given reCAPTCHA expected in 20 s: half of that, but not before 2captcha's 15 s
    store, provider = InMemoryTaskStore(), FakeProvider()
    submitter = service(store, provider)
    task = submitter.submit(request_from_json(VALID), PINGBACK, OWNER)
    stored = store.get(task.task_id)
    assert stored is not None and stored.status is TaskStatus.PENDING and stored.due_at == 1015.0
    # Issue 33: told the likely solve time (1020), a worker held a result landed before it.
    assert submitter.pending.first_look_at(task) == 1016.0
    assert provider.submitted == [(task.task_id, PINGBACK.url)]
    assert (stored.nonce, stored.owner) == (PINGBACK.nonce, OWNER)


def test_store_hiccups_are_retried() -> None:
    store, sleeps = InMemoryTaskStore(), list[float]()
    store.fail_next.extend([unavailable(), unavailable()])
    submitter = SubmitService(
        store, FakeProvider(), FakeDeadLetterQueue(), PendingTasks(120), sleep=sleeps.append
    )
    task = submitter.submit(request_from_json(VALID), PINGBACK)
    assert store.get(task.task_id) is not None and len(sleeps) == 2


def test_given_the_table_down_the_registration_is_queued_for_replay() -> None:
    store, dlq = InMemoryTaskStore(), FakeDeadLetterQueue()
    store.fail_next.extend([unavailable() for _ in range(4)])
    task = service(store, dlq=dlq).submit(request_from_json(VALID), PINGBACK)
    assert [queued for queued, _ in dlq.sent] == [task]
    assert store.get(task.task_id) is None


def test_given_table_and_queue_down_the_error_carries_the_task_id() -> None:
    store = InMemoryTaskStore()
    store.fail_next.extend([unavailable() for _ in range(4)])
    with pytest.raises(TaskNotRecordedError) as raised:
        service(store, dlq=FakeDeadLetterQueue(available=False)).submit(
            request_from_json(VALID), PINGBACK
        )
    assert raised.value.task_id == "70000000001"


def test_provider_rejection_records_nothing() -> None:
    store = InMemoryTaskStore()
    provider = FakeProvider(failure=lambda: ProviderRejectedError("in.php: ERROR_PAGEURL"))
    with pytest.raises(ProviderRejectedError):
        service(store, provider).submit(request_from_json(VALID), PINGBACK)
    assert store.tasks == {}


def test_configuration_errors_are_not_retried_nor_queued() -> None:
    store, dlq = InMemoryTaskStore(), FakeDeadLetterQueue()
    store.fail_next.append(StoreError("DynamoDB UpdateItem failed: ResourceNotFoundException"))
    with pytest.raises(StoreError) as raised:
        service(store, dlq=dlq).submit(request_from_json(VALID), PINGBACK)
    assert not isinstance(raised.value, StoreUnavailableError) and dlq.sent == []


def test_each_issued_pingback_has_its_own_nonce_and_capability() -> None:
    secret = "PgLocalCallbackSecretForTestsOnly0000001"
    first, second = (
        issue_pingback("https://api.test/", secret, 1_800_000_000.5),
        issue_pingback("https://api.test", secret, 1_800_000_000.5),
    )
    assert first.nonce != second.nonce
    assert first.url.startswith(f"https://api.test/callback/v2.{first.nonce}.1800000000.")
    assert secret not in first.url


def test_a_pre_seeded_result_is_discarded_and_reported_at_submit() -> None:
    store, provider, discarded = InMemoryTaskStore(), FakeProvider(), list[str]()
    store.record_result(
        TaskResult("70000000001", "03AFforged", DeliveryPath.CALLBACK, 1.0, nonce=nonce_for("a"))
    )
    submitter = SubmitService(
        store,
        provider,
        FakeDeadLetterQueue(),
        PendingTasks(120),
        on_provisional_discarded=lambda task: discarded.append(task.task_id),
    )
    task = submitter.submit(request_from_json(VALID), PINGBACK, OWNER)
    stored = store.get(task.task_id)
    assert discarded == ["70000000001"]
    assert stored is not None and stored.status is TaskStatus.PENDING and stored.solution is None


@pytest.mark.parametrize(
    "document",
    [
        {**VALID, "method": ["userrecaptcha"]},
        {**VALID, "method": {"a": 1}},
        {**VALID, "sitekey": ["x"]},
        {**VALID, "page_url": "https://example.test/\ud800"},
        {**VALID, "extras": {"action": "\udfff"}},
        {**VALID, "extras": {"action": [1]}},
        {**VALID, "extras": {"action": {"deep": {"er": 1}}}},
        {**VALID, "extras": {"action": 10**5000}},
    ],
)
def test_non_text_and_unencodable_values_are_refused(document: dict[str, object]) -> None:
    with pytest.raises(InvalidFieldError):
        request_from_json(document)


def test_proxy_credentials_and_cookies_go_to_the_provider_and_are_never_kept() -> None:
    """Given a submit with a proxy login and the site's cookies, when the table takes it and
    when it is down, then only the provider ever sees them."""
    secrets = {"proxy": "login:password@proxy.test:3128", "proxytype": "HTTP", "cookies": "sid=1"}
    document = {**VALID, "extras": {"version": "v3", **secrets}}
    store, provider, dlq = InMemoryTaskStore(), FakeProvider(), FakeDeadLetterQueue()
    kept = service(store, provider).submit(request_from_json(document), PINGBACK, OWNER)
    stored = store.get(kept.task_id)
    assert stored is not None and stored.request is not None
    assert "proxy" not in stored.request.fields and "cookies" not in stored.request.fields
    assert stored.request.fields["proxytype"] == "HTTP"
    (sent,) = provider.submitted_requests
    assert isinstance(sent, CaptchaRequest) and sent.fields["proxy"] == secrets["proxy"]
    store.fail_next.extend([unavailable() for _ in range(4)])
    queued = service(store, provider, dlq).submit(request_from_json(document), PINGBACK, OWNER)
    assert "proxy" not in queued.request.fields
    assert all("password" not in repr(message) for message, _ in dlq.sent)
