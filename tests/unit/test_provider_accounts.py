"""logic/accounts.py: which provider account a submit goes to, its threads, its cool-down."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pingback_guard.domain.errors import (
    ConfigurationError,
    ProviderAccountError,
    ProviderRejectedError,
    ProviderRetryableError,
    ProviderThreadsBusyError,
)
from pingback_guard.logic.accounts import (
    AccountPolicy,
    ProviderAccount,
    ProviderAccounts,
    UnknownAccountError,
)
from pingback_guard.provider.client import ThreadUsage
from pingback_guard.settings.env import Env
from pingback_guard.settings.provider import ExtraAccount, ProviderSettings
from tests.fakes import RECAPTCHA_REQUEST, FakeProvider

URL = "https://cb.test/callback/x"


@dataclass
class FakeThreads:
    """res.php threadsinfo of one account: its plan and the tasks it holds."""

    threads: int
    working: int = 0
    reads: int = 0
    failure: Exception | None = None

    def threads_info(self) -> ThreadUsage:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        return ThreadUsage(self.threads, self.working)


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Seen:
    busy: list[str | None] = field(default_factory=list)
    refused: list[tuple[str | None, str]] = field(default_factory=list)


def accounts(
    *plans: tuple[str | None, FakeProvider, FakeThreads | None], clock: Clock | None = None
) -> tuple[ProviderAccounts, Seen]:
    seen = Seen()
    made = ProviderAccounts(
        [ProviderAccount(name, client, threads) for name, client, threads in plans],
        AccountPolicy(threads_cache_seconds=60, recheck_full_seconds=5, cool_down_seconds=30),
        clock=clock or Clock(),
        on_threads_busy=seen.busy.append,
        on_account_refused=lambda name, code: seen.refused.append((name, code)),
    )
    return made, seen


def test_a_submit_goes_to_the_account_with_the_most_free_threads() -> None:
    first, second = FakeProvider(), FakeProvider(next_task_id=9000)
    chooser, _ = accounts((None, first, FakeThreads(5, 4)), ("b", second, FakeThreads(5, 1)))

    submitted = chooser.submit(RECAPTCHA_REQUEST, URL)

    assert (submitted.account_id, submitted.task_id) == ("b", "9000")
    assert first.submitted == []


def test_threads_are_read_once_a_minute_and_counted_forward_by_the_submits_sent() -> None:
    # Given one account of 2 threads, one in use when read
    clock = Clock()
    threads = FakeThreads(2, 1)
    chooser, seen = accounts((None, FakeProvider(), threads), clock=clock)

    # When three submits come within a second
    chooser.submit(RECAPTCHA_REQUEST, URL)
    with pytest.raises(ProviderThreadsBusyError):
        chooser.submit(RECAPTCHA_REQUEST, URL)

    # Then the first took the free thread, the second was refused without in.php and said so
    assert threads.reads == 1
    assert seen.busy == [None]
    # And a full plan is asked again only after recheck_full_seconds
    clock.now += 5
    threads.working = 0
    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id is None
    assert threads.reads == 2


def test_a_full_account_sends_the_submit_to_another() -> None:
    first, second = FakeProvider(), FakeProvider(next_task_id=42)
    chooser, seen = accounts((None, first, FakeThreads(3, 3)), ("b", second, FakeThreads(1, 0)))

    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id == "b"
    assert first.submitted == []
    assert seen.busy == []  # "b" had more free threads: account 1 was never tried


def test_every_account_full_refuses_the_submit_with_nothing_sent() -> None:
    first, second = FakeProvider(), FakeProvider()
    chooser, seen = accounts((None, first, FakeThreads(1, 1)), ("b", second, FakeThreads(2, 2)))

    with pytest.raises(ProviderThreadsBusyError) as refused:
        chooser.submit(RECAPTCHA_REQUEST, URL)

    assert refused.value.resend_is_safe
    assert first.submitted == second.submitted == []
    assert seen.busy == [None, "b"]


def test_an_account_that_refuses_is_skipped_for_its_cool_down_then_tried_again() -> None:
    clock = Clock()
    broke = FakeProvider(failure=lambda: ProviderAccountError("x", code="ERROR_ZERO_BALANCE"))
    spare = FakeProvider(next_task_id=7)
    chooser, seen = accounts((None, broke, None), ("b", spare, None), clock=clock)

    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id == "b"
    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id == "b"
    assert seen.refused == [(None, "ERROR_ZERO_BALANCE")]  # asked once, then skipped

    broke.failure = None
    clock.now += 30
    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id is None


def test_a_provider_busy_refusal_is_counted_and_the_next_account_takes_the_submit() -> None:
    full = FakeProvider(
        failure=lambda: ProviderRetryableError("in.php", code="ERROR_NO_SLOT_AVAILABLE")
    )
    chooser, seen = accounts((None, full, None), ("b", FakeProvider(), None))

    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id == "b"
    assert seen.busy == [None]


def test_one_account_that_refuses_is_still_tried_by_the_next_submit() -> None:
    # Given account 1 alone, down: every submit still reaches it (no cool-down without a spare)
    down = FakeProvider(failure=lambda: ProviderRetryableError("in.php: connection failed"))
    chooser, _ = accounts((None, down, None))

    for _ in range(2):
        with pytest.raises(ProviderRetryableError):
            chooser.submit(RECAPTCHA_REQUEST, URL)

    assert len(down.submitted) == 0
    down.failure = None
    assert chooser.submit(RECAPTCHA_REQUEST, URL).task_id == "70000000001"


def test_a_submit_that_may_have_reached_the_provider_is_never_sent_to_another() -> None:
    lost = FakeProvider(
        failure=lambda: ProviderRetryableError("in.php: read timeout", resend_is_safe=False)
    )
    spare = FakeProvider()
    chooser, _ = accounts((None, lost, None), ("b", spare, None))

    with pytest.raises(ProviderRetryableError):
        chooser.submit(RECAPTCHA_REQUEST, URL)
    assert spare.submitted == []


def test_a_rejected_request_is_not_sent_to_another_account() -> None:
    bad = FakeProvider(failure=lambda: ProviderRejectedError("x", code="ERROR_GOOGLEKEY"))
    spare = FakeProvider()
    chooser, _ = accounts((None, bad, None), ("b", spare, None))

    with pytest.raises(ProviderRejectedError):
        chooser.submit(RECAPTCHA_REQUEST, URL)
    assert spare.submitted == []


def test_every_account_refusing_for_its_account_raises_that_error() -> None:
    def broke() -> ProviderAccountError:
        return ProviderAccountError("x", code="ERROR_WRONG_USER_KEY")

    chooser, _ = accounts(
        (None, FakeProvider(failure=broke), None), ("b", FakeProvider(failure=broke), None)
    )

    with pytest.raises(ProviderAccountError):
        chooser.submit(RECAPTCHA_REQUEST, URL)


def test_a_provider_without_threadsinfo_is_bounded_by_its_own_answers() -> None:
    # 2captcha answers threadsinfo ERROR_BAD_PARAMETERS: its cap is unknown, submits go on
    threads = FakeThreads(0, failure=ProviderRejectedError("x", code="ERROR_BAD_PARAMETERS"))
    provider = FakeProvider()
    chooser, _ = accounts((None, provider, threads))

    chooser.submit(RECAPTCHA_REQUEST, URL)
    chooser.submit(RECAPTCHA_REQUEST, URL)

    assert len(provider.submitted) == 2
    assert threads.reads == 1


def test_an_account_whose_threadsinfo_is_refused_for_its_key_is_skipped() -> None:
    threads = FakeThreads(5, failure=ProviderAccountError("x", code="ERROR_KEY_DOES_NOT_EXIST"))
    first, second = FakeProvider(), FakeProvider()
    chooser, seen = accounts((None, first, threads), ("b", second, None))

    assert chooser.submit(RECAPTCHA_REQUEST, URL).account_id == "b"
    assert seen.refused == [(None, "ERROR_KEY_DOES_NOT_EXIST")]


def test_a_task_is_read_through_its_own_account_and_old_tasks_through_account_1() -> None:
    first, second = FakeProvider(), FakeProvider()
    chooser, _ = accounts((None, first, None), ("b", second, None))

    assert chooser.client_for(None) is first
    assert chooser.client_for("b") is second
    with pytest.raises(UnknownAccountError):
        chooser.client_for("gone").get_results(["1"])


class TestExtraAccountSettings:
    BASE = {
        "PROVIDER_BASE_URL": "https://ocr.captchaai.com",
        "PROVIDER_API_KEY_PARAMETER": "/pg/key",
    }

    def settings(self, extra: str) -> tuple[ExtraAccount, ...]:
        env = Env({**self.BASE, "PROVIDER_EXTRA_ACCOUNTS": extra})
        return ProviderSettings.from_env(env).extra_accounts

    def test_none_configured_is_account_1_alone(self) -> None:
        assert ProviderSettings.from_env(Env(self.BASE)).extra_accounts == ()

    def test_each_account_s_key_sits_beside_account_1_s_with_its_own_provider(self) -> None:
        assert self.settings("b, c|https://2captcha.com|2captcha") == (
            ExtraAccount("b", "/pg/key-b", "https://ocr.captchaai.com"),
            ExtraAccount("c", "/pg/key-c", "https://2captcha.com", "2captcha"),
        )

    @pytest.mark.parametrize(
        "extra",
        ["b,b", "a b", "b|http://example.com", "b|https://x.test|anticaptcha", "b|https://u:p@x"],
    )
    def test_a_malformed_list_fails_at_cold_start(self, extra: str) -> None:
        with pytest.raises(ConfigurationError):
            self.settings(extra)
