"""Reports: once per solved task ever, inside the window, and never recorded when not sent."""

from __future__ import annotations

from typing import Any

import pytest

from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderError,
    ProviderRejectedError,
    ProviderRetryableError,
    SecretUnavailableError,
    StoreError,
)
from pingback_guard.domain.task import (
    DeliveryPath,
    NewTask,
    ReportClaim,
    ReportVerdict,
    TaskResult,
)
from pingback_guard.logic.report import (
    REPORT_LEASE_SECONDS,
    InvalidReportError,
    ReportService,
    parse_report,
)
from tests.fakes import FakeProvider, InMemoryTaskStore, token_request, unavailable

TOKEN = "03AFcWeA5" + "q" * 700
TASK = "72000000001"
FINISHED = 1030.0
WINDOW = 900.0
WORKER = "arn:aws:iam::123456789012:user/worker"
OTHER = "arn:aws:iam::123456789012:user/someone-else"
ADMIN = "arn:aws:iam::123456789012:role/ops"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def solved_store(
    owner: str | None = None, via: DeliveryPath = DeliveryPath.CALLBACK
) -> InMemoryTaskStore:
    store = InMemoryTaskStore()
    request = token_request("userrecaptcha", "sitekey", "https://example.test/")
    store.record_submission(NewTask(TASK, request, 1000.0, 1020.0, owner=owner))
    store.record_result(TaskResult(TASK, TOKEN, via, FINISHED))
    return store


def service(
    store: InMemoryTaskStore, provider: FakeProvider, now: float = FINISHED + 60
) -> tuple[ReportService, Clock]:
    clock = Clock(now)
    return ReportService(store, provider, WINDOW, clock=clock), clock


@pytest.mark.parametrize(
    ("document", "verdict"), [({"correct": True}, ReportVerdict.GOOD), ({"correct": False}, "bad")]
)
def test_parse_accepts_exactly_a_boolean(document: Any, verdict: str) -> None:
    assert parse_report(document) == verdict


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        "true",
        {},
        {"correct": "true"},
        {"correct": 1},
        {"correct": None},
        {"correct": True, "extra": 1},
        {"Correct": True},
    ],
)
def test_parse_refuses_anything_else(document: Any) -> None:
    with pytest.raises(InvalidReportError):
        parse_report(document)


def test_a_bad_token_is_reported_once() -> None:
    store, provider = solved_store(), FakeProvider()
    reports, _ = service(store, provider)
    assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.CLAIMED
    assert reports.report(TASK, ReportVerdict.GOOD, WORKER) is ReportClaim.ALREADY_REPORTED
    assert provider.reports == [(TASK, False)]
    task = store.get(TASK)
    assert task is not None and task.reported is ReportVerdict.BAD
    assert store.report_leases == {}


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("unknown", ReportClaim.UNKNOWN_TASK),
        ("pending", ReportClaim.NOT_SOLVED),
        ("late", ReportClaim.WINDOW_CLOSED),
    ],
)
def test_refusals_send_nothing(setup: str, expected: ReportClaim) -> None:
    store, provider = solved_store(), FakeProvider()
    reports, clock = service(store, provider)
    task_id = TASK
    if setup == "unknown":
        task_id = "79999999999"
    elif setup == "pending":
        task_id = "72000000002"
        request = token_request("hcaptcha", "sitekey", "https://example.test/")
        store.record_submission(NewTask(task_id, request, 1000.0, 1020.0))
    else:
        clock.now = FINISHED + WINDOW + 1
    assert reports.report(task_id, ReportVerdict.BAD, WORKER) is expected
    assert provider.reports == []


def test_the_window_counts_from_the_earliest_finish() -> None:
    store, provider = InMemoryTaskStore(), FakeProvider()
    request = token_request("userrecaptcha", "sitekey", "https://example.test/")
    store.record_submission(NewTask(TASK, request, 990.0, 1010.0, owner=WORKER))
    late = TaskResult(TASK, TOKEN, DeliveryPath.POLL, received_at=1500.0, finished_after=1000.0)
    store.record_result(late)
    reports, _ = service(store, provider, now=1000.0 + WINDOW + 1)
    assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.WINDOW_CLOSED


@pytest.mark.parametrize(
    "failure",
    [
        lambda: ProviderRetryableError("res.php: connection failed", resend_is_safe=True),
        lambda: SecretUnavailableError("provider API key unreadable"),
    ],
)
def test_a_report_that_never_left_is_released_and_may_be_tried_again(failure: Any) -> None:
    store, provider = solved_store(), FakeProvider(report_failure=failure)
    reports, clock = service(store, provider)
    with pytest.raises(type(failure())):
        reports.report(TASK, ReportVerdict.BAD, WORKER)
    task = store.get(TASK)
    assert task is not None and task.reported is None
    provider.report_failure = None
    clock.now += 1
    assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.CLAIMED
    assert provider.reports == [(TASK, False)]


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        # 2captcha's refusals of a report (https://2captcha.com/h/how-to-submit-reports): not
        # in the stack's table of codes, so the client raises them as retryable.
        (
            lambda: ProviderRetryableError("r", code="ERROR_REPORT_NOT_RECORDED"),
            "ERROR_REPORT_NOT_RECORDED",
        ),
        (
            lambda: ProviderRetryableError("r", code="ERROR_DUPLICATE_REPORT"),
            "ERROR_DUPLICATE_REPORT",
        ),
        (
            lambda: ProviderRejectedError("r", code="ERROR_WRONG_CAPTCHA_ID"),
            "ERROR_WRONG_CAPTCHA_ID",
        ),
        (lambda: ProviderAccountError("r", code="ERROR_ZERO_BALANCE"), "ERROR_ZERO_BALANCE"),
        # Reached the provider with no answer to read: HTTP 429 or 5xx, a timeout after sending.
        (
            lambda: ProviderRetryableError("res.php: HTTP 429", resend_is_safe=False),
            "ERROR_REPORT_NOT_RECORDED",
        ),
        (lambda: ProviderRetryableError("r", code="ERROR: 1005"), "ERROR_REPORT_NOT_RECORDED"),
    ],
)
def test_a_report_that_reached_the_provider_is_final_with_its_code(failure: Any, code: str) -> None:
    store, provider = solved_store(), FakeProvider(report_failure=failure)
    reports, clock = service(store, provider)
    with pytest.raises(ProviderError) as raised:
        reports.report(TASK, ReportVerdict.BAD, WORKER)
    assert raised.value.code == code
    assert not isinstance(raised.value, ProviderRetryableError)
    provider.report_failure = None
    for _ in range(3):
        clock.now += REPORT_LEASE_SECONDS + 1
        assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.ALREADY_REPORTED
    assert provider.reports == []
    assert store.report_leases == {}


def test_when_even_the_release_fails_the_lease_lapses_and_a_retry_works() -> None:
    store = solved_store()
    provider = FakeProvider(report_failure=lambda: ProviderRetryableError("res.php: no connection"))
    reports, clock = service(store, provider)
    original_release = store.release_report

    def table_down(task_id: str, claimed_at: float) -> bool:
        raise unavailable()

    store.release_report = table_down  # type: ignore[method-assign]
    with pytest.raises(ProviderRetryableError):
        reports.report(TASK, ReportVerdict.BAD, WORKER)
    store.release_report = original_release  # type: ignore[method-assign]
    provider.report_failure = None
    assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.ALREADY_REPORTED
    clock.now += REPORT_LEASE_SECONDS + 1
    assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.CLAIMED
    assert provider.reports == [(TASK, False)]


def test_a_store_error_on_the_claim_sends_nothing() -> None:
    store, provider = solved_store(), FakeProvider()
    store.fail_next.append(unavailable())
    reports, _ = service(store, provider)
    with pytest.raises(StoreError):
        reports.report(TASK, ReportVerdict.GOOD, WORKER)
    assert provider.reports == []


def test_a_failed_confirmation_still_counts_as_reported() -> None:
    store, provider = solved_store(), FakeProvider()
    reports, _ = service(store, provider)

    def table_down(task_id: str, claimed_at: float) -> bool:
        raise unavailable()

    store.confirm_report = table_down  # type: ignore[method-assign]
    assert reports.report(TASK, ReportVerdict.GOOD, WORKER) is ReportClaim.CLAIMED
    assert provider.reports == [(TASK, True)]


def test_another_principals_task_is_unknown_to_it_and_nothing_is_sent() -> None:
    store = solved_store(owner=WORKER, via=DeliveryPath.POLL)
    provider = FakeProvider()
    reports, _ = service(store, provider)
    assert reports.report(TASK, ReportVerdict.BAD, OTHER) is ReportClaim.UNKNOWN_TASK
    assert provider.reports == []
    assert reports.report(TASK, ReportVerdict.BAD, WORKER) is ReportClaim.CLAIMED


def test_the_admin_principal_may_report_any_task() -> None:
    store = solved_store(owner=WORKER, via=DeliveryPath.POLL)
    provider = FakeProvider()
    admin = ReportService(store, provider, WINDOW, admin_principal_arn=ADMIN, clock=Clock(1090.0))
    assert admin.report(TASK, ReportVerdict.GOOD, ADMIN) is ReportClaim.CLAIMED
    assert provider.reports == [(TASK, True)]
