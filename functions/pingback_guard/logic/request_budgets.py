"""No key holder can spend the provider's limits for the others: each key has a request budget
per endpoint (a second and a minute, counted across every container), and the account's balance
is read from the provider at most once per refresh interval for the whole stack.

docs/operations.md ("What one rogue key holder can do") derives the default budgets from the
provider's blocking rules and says why a key holder sees the balance.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

from pingback_guard.data.request_budgets import RequestBudgetStore
from pingback_guard.domain.errors import (
    ProviderAccountError,
    ProviderError,
    ProviderRetryableError,
)
from pingback_guard.domain.request_budgets import BalanceReading, RequestLimits


class Endpoint(StrEnum):
    IN_PHP = "in.php"
    RES_PHP = "res.php"


# What 2captcha answers a key that asks too often (https://2captcha.com/api-docs/limits): in.php
# MAX_USER_TURN (more than 60 submits in 3 s), res.php ERROR: 1005 (too many res.php requests).
OVER_BUDGET_ANSWERS = {Endpoint.IN_PHP: "MAX_USER_TURN", Endpoint.RES_PHP: "ERROR: 1005"}


class KeyBudget:
    """One endpoint's budget, the same for every key; a request over it goes no further."""

    def __init__(
        self,
        store: RequestBudgetStore,
        endpoint: Endpoint,
        limits: RequestLimits,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._endpoint = endpoint
        self._limits = limits
        self._clock = clock

    @property
    def refusal(self) -> str:
        """The provider's answer for a key over this budget."""
        return OVER_BUDGET_ANSWERS[self._endpoint]

    def admits(self, key_id: str) -> bool:
        """Count one request of ``key_id``; False when its second or its minute is spent. A
        StoreError is the caller's to answer."""
        return self._store.spend(f"{self._endpoint.value}#{key_id}", self._clock(), self._limits)

    def admits_reads(self, key_id: str, reads: int) -> bool:
        """Count ``reads`` more task reads of a request already admitted (res.php's ``ids=``)
        in ``key_id``'s minute, where each costs what one request does; its second counts the
        request once, as it already has. False (nothing counted) when the minute cannot hold
        them."""
        if reads <= 0:
            return True
        return self._store.spend(
            f"{self._endpoint.value}#{key_id}",
            self._clock(),
            self._limits,
            units=reads,
            second=False,
        )


class BalanceSource(Protocol):
    def balance(self) -> float: ...


class SharedBalance:
    """The provider account's balance, read from the provider at most once per
    ``refresh_seconds`` for the whole stack (a conditional claim: one container refreshes, every
    other serves the cached answer, stale rather than none while a refresh fails)."""

    def __init__(
        self,
        store: RequestBudgetStore,
        provider: BalanceSource,
        refresh_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._provider = provider
        self._refresh_seconds = refresh_seconds
        self._clock = clock

    def balance(self) -> float:
        """The balance, or the account error the provider last answered (ProviderAccountError);
        ProviderRetryableError when there is no answer yet to serve."""
        now = self._clock()
        cached = self._store.balance()
        fresh = cached is not None and now - cached.read_at < self._refresh_seconds
        if not fresh and self._store.claim_balance_refresh(now, self._refresh_seconds):
            cached = self._refresh(now) or cached
        if cached is None:
            raise ProviderRetryableError("getbalance: another request is reading the balance")
        return _answer(cached)

    def _refresh(self, now: float) -> BalanceReading | None:
        """Ask the provider; None when it gave no answer (the claim still holds until the next
        interval: a failing provider is asked once per interval, not once per request)."""
        try:
            reading = BalanceReading(read_at=now, balance=self._provider.balance())
        except ProviderAccountError as error:
            reading = BalanceReading(read_at=now, error_code=error.code)
        except ProviderError:
            return None
        self._store.record_balance(reading)
        return reading


def _answer(reading: BalanceReading) -> float:
    if reading.balance is None:
        raise ProviderAccountError("getbalance (cached)", code=reading.error_code)
    return reading.balance
