"""Report rules: a worker's verdict on a solved token goes to the provider once, in its window.

The conditional write that claims the report is a lease until the provider has taken it: when
the provider call fails the claim is released, and if even that write fails the lease lapses, so
no report stays recorded that the provider never got.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import PingbackGuardError, StoreError
from pingback_guard.domain.task import ReportAttempt, ReportClaim, ReportVerdict
from pingback_guard.provider.client import ProviderClient

# Longer than one provider call with its retries can take inside the function's timeout.
REPORT_LEASE_SECONDS = 60.0


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
        provider: ProviderClient,
        window_seconds: float,
        *,
        admin_principal_arn: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._provider = provider
        self._window_seconds = window_seconds
        self._admin_principal_arn = admin_principal_arn
        self._clock = clock

    def report(self, task_id: str, verdict: ReportVerdict, principal: str) -> ReportClaim:
        """CLAIMED once the provider took it; a refusal names why (another principal's task is
        UNKNOWN_TASK, as in GET). Provider and store errors are raised after the claim is
        released."""
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
            self._provider.report(task_id, good=verdict is ReportVerdict.GOOD)
        except PingbackGuardError:
            self._release(task_id, claimed_at)
            raise
        # The provider has it. Unconfirmed, the claim lapses after the lease; a retry then would
        # send it again, which the provider answers as a duplicate report.
        with contextlib.suppress(StoreError):
            self._store.confirm_report(task_id, claimed_at)
        return claim

    def _release(self, task_id: str, claimed_at: float) -> None:
        try:
            self._store.release_report(task_id, claimed_at)
        except StoreError:
            return  # the lease lapses after REPORT_LEASE_SECONDS: the worker can retry then
