"""Which provider account a submit goes to, and which account a task is read through.

CaptchaAI sells plans by threads: at most N tasks solving at once per account, read from
res.php ``threadsinfo`` (``{"threads": N, "working_threads": M}``; captchaai 1.0.1,
core/orchestrator.py ``get_thread_usage``). Each account's usage is read at most once per
``threads_cache_seconds`` per container and counted forward by the submits this container sends;
an account that looks full is asked again at most every ``recheck_full_seconds`` (CaptchaAI's SDK
waits about 8 s before it asks again). A submit goes to the account with the most free threads;
when none has one it is refused here (``ProviderThreadsBusyError``: nothing sent, so a client may
send it again) rather than queued or refused by the provider unseen, and ``on_threads_busy`` is
told (ProviderThreadsBusy, alarmed). An account that refused (no slot, no balance, down) is skipped
for ``cool_down_seconds`` while another can take the submit; when every account is cooling down,
the one that recovers first is tried, so one account behaves as if there were no cool-down.

A task records its account (``None``: account 1, and every task written before accounts existed),
and is polled, read through and reported through that account only: another account's key would
be told ERROR_WRONG_CAPTCHA_ID for it, a task's permanent error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderError,
    ProviderRejectedError,
    ProviderRetryableError,
    ProviderThreadsBusyError,
)
from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.provider.answers import ProviderAnswer
from pingback_guard.provider.client import ProviderClient, ThreadsReader, ThreadUsage

# Submit refusals that mean "no free thread": CaptchaAI's busy ERROR_ZERO_BALANCE becomes
# retryable in the client only when threadsinfo shows the plan full (provider/answers.py);
# ERROR_NO_SLOT_AVAILABLE is 2captcha's and CaptchaAI's blog's
# (https://blog.captchaai.com/captchaai-thread-limit-upgrade-guide).
THREADS_BUSY_CODES = frozenset({"ERROR_ZERO_BALANCE", "ERROR_NO_SLOT_AVAILABLE"})


@dataclass(frozen=True)
class AccountPolicy:
    threads_cache_seconds: float = 60.0
    recheck_full_seconds: float = 5.0
    cool_down_seconds: float = 30.0


@dataclass(frozen=True)
class ProviderAccount:
    """``account_id``: None for account 1. ``threads``: None for a provider without
    ``threadsinfo`` (2captcha answers it ERROR_BAD_PARAMETERS): its cap is the provider's."""

    account_id: str | None
    client: ProviderClient
    threads: ThreadsReader | None = None


@dataclass(frozen=True)
class AccountTask:
    task_id: str
    account_id: str | None


class UnknownAccountError(ProviderAccountError):
    """A task records an account this function is not configured with."""


@dataclass
class _Usage:
    """One account as this container knows it: its last threadsinfo, the submits sent since,
    and until when it is skipped after a refusal."""

    read: ThreadUsage | None = None
    read_at: float = float("-inf")
    sent_since_read: int = 0
    cooling_until: float = float("-inf")

    def free_threads(self) -> float:
        if self.read is None:
            return float("inf")
        return self.read.threads - self.read.working_threads - self.sent_since_read


class ProviderAccounts:
    def __init__(
        self,
        accounts: Sequence[ProviderAccount],
        policy: AccountPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_threads_busy: Callable[[str | None], None] = lambda _account: None,
        on_account_refused: Callable[[str | None, str], None] = lambda _account, _code: None,
    ) -> None:
        if not accounts:
            raise ValueError("at least one provider account")
        self._accounts = tuple(accounts)
        self._by_id = {account.account_id: account for account in self._accounts}
        self._usage = {account.account_id: _Usage() for account in self._accounts}
        self._policy = policy or AccountPolicy()
        self._clock = clock
        self._on_threads_busy = on_threads_busy
        self._on_account_refused = on_account_refused

    @classmethod
    def single(cls, client: ProviderClient) -> ProviderAccounts:
        return cls([ProviderAccount(None, client)])

    @property
    def primary(self) -> ProviderClient:
        return self._accounts[0].client

    @property
    def has_several(self) -> bool:
        return len(self._accounts) > 1

    def client_for(self, account_id: str | None) -> ProviderClient:
        """The client of the account a task records (None: account 1); for an account no
        longer configured, one that raises UnknownAccountError at its every call."""
        account = self._by_id.get(account_id)
        return _Unconfigured() if account is None else account.client

    def submit(self, request: CaptchaRequest, pingback_url: str) -> AccountTask:
        """in.php through the account with the most free threads; the next one when it
        refuses. A rejected request, or one that may have reached the provider, is not sent
        again elsewhere: the first would be a second refusal, the second a second task."""
        refusal: ProviderError | None = None
        busy = False
        for account in self._in_order():
            if not self._has_free_thread(account):
                busy = True
                self._on_threads_busy(account.account_id)
                continue
            try:
                task_id = account.client.submit(request, pingback_url)
            except ProviderRejectedError:
                raise
            except ProviderAccountError as error:
                self._refused(account, error)
                refusal = error
                continue
            except ProviderRetryableError as error:
                if not error.resend_is_safe:
                    raise
                if error.code in THREADS_BUSY_CODES:
                    busy = True
                    self._on_threads_busy(account.account_id)
                self._refused(account, error)
                refusal = error
                continue
            self._usage[account.account_id].sent_since_read += 1
            return AccountTask(task_id, account.account_id)
        if busy or refusal is None:
            raise ProviderThreadsBusyError(
                "every provider account's threads are in use", code="ERROR_NO_SLOT_AVAILABLE"
            )
        raise refusal

    def _in_order(self) -> list[ProviderAccount]:
        """Accounts not cooling down, the most free threads first (account 1 first among
        equals); when every one is cooling down, the one that recovers first."""
        for account in self._ready():
            self._read_threads_older_than(account, self._policy.threads_cache_seconds)
        ready = self._ready()  # without any whose threadsinfo was just refused for its key
        if not ready:
            return [min(self._accounts, key=lambda a: self._usage[a.account_id].cooling_until)]
        return sorted(ready, key=lambda a: -self._usage[a.account_id].free_threads())

    def _ready(self) -> list[ProviderAccount]:
        now = self._clock()
        return [a for a in self._accounts if self._usage[a.account_id].cooling_until <= now]

    def _has_free_thread(self, account: ProviderAccount) -> bool:
        usage = self._usage[account.account_id]
        if usage.free_threads() <= 0:
            self._read_threads_older_than(account, self._policy.recheck_full_seconds)
        return usage.free_threads() > 0

    def _read_threads_older_than(self, account: ProviderAccount, seconds: float) -> None:
        usage = self._usage[account.account_id]
        if account.threads is not None and self._clock() - usage.read_at >= seconds:
            self._read_threads(account, usage)

    def _read_threads(self, account: ProviderAccount, usage: _Usage) -> None:
        assert account.threads is not None
        usage.read_at = self._clock()
        try:
            usage.read, usage.sent_since_read = account.threads.threads_info(), 0
        except ProviderAccountError as error:
            self._refused(account, error)
        except ProviderRejectedError:
            usage.read = None  # the provider has no threadsinfo: its own answers are the cap
        except PingbackGuardError:
            return  # the last reading stands until the next try; the submit says the rest

    def _refused(self, account: ProviderAccount, error: ProviderError) -> None:
        """Cooled down; told (with several accounts: with one, the caller gets the error)."""
        self._usage[account.account_id].cooling_until = (
            self._clock() + self._policy.cool_down_seconds
        )
        if self.has_several and isinstance(error, ProviderAccountError):
            self._on_account_refused(account.account_id, error.code)


def as_accounts(provider: ProviderClient | ProviderAccounts) -> ProviderAccounts:
    """One client is account 1 alone (unit tests' fakes, a function with one account)."""
    return provider if isinstance(provider, ProviderAccounts) else ProviderAccounts.single(provider)


class _Unconfigured:
    """The client of a task whose account is no longer configured: nothing can be asked."""

    def submit(self, request: CaptchaRequest, pingback_url: str) -> str:
        raise UnknownAccountError("the task's provider account is not configured")

    def get_results(self, task_ids: Sequence[str]) -> dict[str, ProviderAnswer]:
        raise UnknownAccountError("the task's provider account is not configured")

    def report(self, task_id: str, *, good: bool) -> None:
        raise UnknownAccountError("the task's provider account is not configured")

    def balance(self) -> float:
        raise UnknownAccountError("the task's provider account is not configured")
