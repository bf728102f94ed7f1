"""Submit rules: what a worker may ask for, and never a provider task unknown to the table."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import (
    DeadLetterError,
    StoreUnavailableError,
    TaskNotRecordedError,
)
from pingback_guard.domain.task import CaptchaRequest, NewTask, SubmissionOutcome, TaskOrigin
from pingback_guard.kinds.registry import expected_solve_seconds
from pingback_guard.logic import capability
from pingback_guard.logic.accounts import ProviderAccounts, as_accounts
from pingback_guard.logic.pacing import MIN_RETRY_AFTER_SECONDS
from pingback_guard.logic.poll_schedule import first_poll_delay
from pingback_guard.provider.client import ProviderClient
from pingback_guard.queue.dead_letter import DeadLetterQueue

RECORD_ATTEMPTS = 4


def pingback_url(public_base_url: str, secret: str) -> str:
    return f"{public_base_url.rstrip('/')}/callback/{secret}"


@dataclass(frozen=True)
class IssuedPingback:
    """A per-task pingback URL and the nonce the task is recorded with."""

    nonce: str
    url: str


def issue_pingback(public_base_url: str, secret: str, issued_at: float) -> IssuedPingback:
    minted = capability.mint(secret, issued_at)
    return IssuedPingback(minted.nonce, pingback_url(public_base_url, minted.token))


@dataclass(frozen=True)
class PendingTasks:
    """How a task is recorded PENDING, whether this stack submitted it or the worker did: when,
    and its first check, early (the callback timeout at the latest)."""

    callback_timeout_seconds: float
    expected_solve_seconds: float = 20.0
    clock: Callable[[], float] = time.time

    def new(
        self,
        task_id: str,
        request: CaptchaRequest,
        nonce: str | None,
        owner: str | None,
        forward_url: str | None = None,
        *,
        origin: TaskOrigin = TaskOrigin.SUBMIT,
        provider_account: str | None = None,
    ) -> NewTask:
        now = self.clock()
        first_check_after = first_poll_delay(
            request.method, self._expected(request.method), self.callback_timeout_seconds
        )
        kept = request.without_secrets()
        return NewTask(
            task_id,
            kept,
            now,
            now + first_check_after,
            nonce=nonce,
            owner=owner,
            forward_url=forward_url,
            origin=origin,
            provider_account=provider_account,
        )

    def first_look_at(self, task: NewTask) -> float:
        """When the worker should first look: just after the stack's first check (the poller's,
        or a GET's read-through while no poller sweeps), which finds a result whose pingback
        was lost. Told the likely solve time instead, a worker held a result that had landed
        before it (pingback delivered) until then: 14-16 s at p95."""
        return task.first_poll_at + MIN_RETRY_AFTER_SECONDS

    def _expected(self, method: str) -> float:
        return expected_solve_seconds(method, self.expected_solve_seconds)


class SubmitService:
    def __init__(
        self,
        store: TaskStore,
        provider: ProviderClient | ProviderAccounts,
        dead_letters: DeadLetterQueue,
        pending: PendingTasks,
        *,
        sleep: Callable[[float], None] = time.sleep,
        on_provisional_discarded: Callable[[NewTask], None] = lambda _task: None,
        on_registration_replaced: Callable[[NewTask], None] = lambda _task: None,
        after_recorded: Callable[[], object] = lambda: None,
    ) -> None:
        """``after_recorded``: called once a task is in the table (logic/poller_wake.py starts
        the poller there); it must not raise."""
        self._store = store
        self._accounts = as_accounts(provider)
        self._dead_letters = dead_letters
        self.pending = pending
        self._sleep = sleep
        self._on_provisional_discarded = on_provisional_discarded
        self._on_registration_replaced = on_registration_replaced
        self._after_recorded = after_recorded

    def submit(
        self,
        request: CaptchaRequest,
        pingback: IssuedPingback,
        owner: str | None = None,
        forward_url: str | None = None,
    ) -> NewTask:
        """Provider first (it names the task), then PENDING: retried, else queued for replay.

        The record is the caller's whatever else claimed the id (the provider holds this
        submit's URL). Only when the table and the dead-letter queue both refuse does the caller
        get an error, and that error carries the provider's task id. ``forward_url``: the
        worker's own pingback URL (in.php's ``pingback``), kept with the task for the result's
        forward. The task goes to a provider account with a free thread (logic/accounts.py)
        and records it.
        """
        submitted = self._accounts.submit(request, pingback.url)
        task = self.pending.new(
            submitted.task_id,
            request,
            pingback.nonce,
            owner,
            forward_url,
            provider_account=submitted.account_id,
        )
        try:
            outcome = self._record(task)
            if outcome is SubmissionOutcome.PROVISIONAL_DISCARDED:
                self._on_provisional_discarded(task)
            if outcome is SubmissionOutcome.REGISTRATION_REPLACED:
                self._on_registration_replaced(task)
        except StoreUnavailableError as store_failure:
            try:
                self._dead_letters.send(task, reason=str(store_failure))
            except DeadLetterError:
                raise TaskNotRecordedError(task.task_id) from None
            # Not in the table yet: no poller can see it before the replay writes it.
            return task
        self._after_recorded()
        return task

    def _record(self, task: NewTask) -> SubmissionOutcome:
        for attempt in range(RECORD_ATTEMPTS):
            try:
                return self._store.record_submission(task)
            except StoreUnavailableError:
                if attempt + 1 >= RECORD_ATTEMPTS:
                    raise
                self._sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")
