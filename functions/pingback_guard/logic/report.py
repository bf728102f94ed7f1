"""Report rules: a worker's verdict on a solved token goes to the provider once, in its window.

The conditional write that claims the report is a lease until the report has reached the
provider: then it is final whatever the provider answered (OK_REPORT_RECORDED, or a refusal such
as ERROR_REPORT_NOT_RECORDED or ERROR_DUPLICATE_REPORT, which 2captcha gives for a report it will
not count: https://2captcha.com/h/how-to-submit-reports), so one task's report reaches the
provider at most once, however often a worker asks. Only a report that surely never reached the
provider (no connection made, no API key to send) releases the claim; if even that write fails
the lease lapses, so no report stays recorded that the provider never got.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderError,
    ProviderRejectedError,
    ProviderRetryableError,
    StoreError,
)
from pingback_guard.domain.task import ReportAttempt, ReportClaim, ReportVerdict
from pingback_guard.logic.accounts import ProviderAccounts, UnknownAccountError, as_accounts
from pingback_guard.provider.client import ProviderClient

# Longer than the one provider call can take inside the function's timeout.
REPORT_LEASE_SECONDS = 60.0
# What a worker is told of a report that reached the provider without an answer it could read
# (HTTP 429 or 5xx, a timeout after sending): it is not sent again.
REPORT_NOT_RECORDED = "ERROR_REPORT_NOT_RECORDED"


class InvalidReportError(ValueError):
    """A report body that is not {"correct": true|false}."""


def parse_report(document: object) -> ReportVerdict:
    if not isinstance(document, Mapping) or set(document) != {"correct"}:
        raise InvalidReportError('body must be the JSON object {"correct": true|false}')
    correct = document["correct"]
    if not isinstance(correct, bool):
        raise InvalidReportError('"correct" must be true or false')
    return ReportVerdict.GOOD if correct else ReportVerdict.BAD


class ReportService:
    def __init__(
        self,
        store: TaskStore,
        provider: ProviderClient | ProviderAccounts,
        window_seconds: float,
        *,
        admin_principal_arn: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._accounts = as_accounts(provider)
        self._window_seconds = window_seconds
        self._admin_principal_arn = admin_principal_arn
        self._clock = clock

    def report(self, task_id: str, verdict: ReportVerdict, principal: str) -> ReportClaim:
        """CLAIMED once the provider took it; a refusal names why (another principal's task is
        UNKNOWN_TASK, as in GET). A provider error is raised after the claim is settled: kept
        (ProviderRejectedError or ProviderAccountError with the provider's code) when the report
        reached the provider, released when it surely did not. Store errors are raised as is."""
        claimed_at = self._clock()
        is_admin = bool(self._admin_principal_arn) and principal == self._admin_principal_arn
        claim = self._store.claim_report(
            ReportAttempt(
                task_id,
                verdict,
                owner=None if is_admin else principal,
                now=claimed_at,
                window_start=claimed_at - self._window_seconds,
                lease_seconds=REPORT_LEASE_SECONDS,
            )
        )
        if claim is not ReportClaim.CLAIMED:
            return claim
        try:
            provider = self._account_of(task_id)
            provider.report(task_id, good=verdict is ReportVerdict.GOOD)
        except PingbackGuardError as error:
            if not _may_have_reached_provider(error):
                self._release(task_id, claimed_at)
                raise
            self._confirm(task_id, claimed_at)
            raise _final(error) from None
        self._confirm(task_id, claimed_at)
        return claim

    def _account_of(self, task_id: str) -> ProviderClient:
        """The report goes to the account the task was submitted through: with one account,
        that one; with several, the task's item says which (one read after the claim)."""
        if not self._accounts.has_several:
            return self._accounts.primary
        task = self._store.get(task_id)
        return self._accounts.client_for(None if task is None else task.provider_account)

    def _confirm(self, task_id: str, claimed_at: float) -> None:
        """The provider has it. Unconfirmed (the table down), the claim lapses after the lease;
        a retry then would send it again, which the provider answers as a duplicate report."""
        with contextlib.suppress(StoreError):
            self._store.confirm_report(task_id, claimed_at)

    def _release(self, task_id: str, claimed_at: float) -> None:
        try:
            self._store.release_report(task_id, claimed_at)
        except StoreError:
            return  # the lease lapses after REPORT_LEASE_SECONDS: the worker can retry then


def _may_have_reached_provider(error: PingbackGuardError) -> bool:
    """False only for a report that surely never left: no connection made (the client's
    ``resend_is_safe``), or no provider call at all (the API key unreadable, the task's
    account not configured)."""
    if isinstance(error, UnknownAccountError):
        return False
    if isinstance(error, ProviderRetryableError):
        return bool(error.code) or not error.resend_is_safe
    return isinstance(error, ProviderError)


def _final(error: PingbackGuardError) -> PingbackGuardError:
    """The provider's answer, passed on as final: its own refusal or account code as it gave
    it; anything else (a rate-limit code, no readable answer) as ERROR_REPORT_NOT_RECORDED."""
    if isinstance(error, ProviderRejectedError | ProviderAccountError):
        return error
    code = error.code if isinstance(error, ProviderError) else ""
    final_code = code if code.startswith("ERROR_") else REPORT_NOT_RECORDED
    return ProviderRejectedError(f"report not taken: {final_code}", code=final_code)
