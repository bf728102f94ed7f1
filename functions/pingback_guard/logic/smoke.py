"""Synthetic tasks for `pingback-guard smoke`: a deployed stack proves itself without the provider.

Only the stack's admin principal (AdminPrincipalArn) may create one, and it is that principal's
own task. The stack picks the id (20 digits starting with 9: providers hand out ids of 10 to 12
digits, and the write refuses any id the table holds), records it PENDING with its own pingback
URL's nonce and origin ``smoke``, and keeps it one retention window. Nothing sends it to the
provider: it has no due keys (the poller never sees it), GET never checks it at res.php, report
refuses it, and this stack's own submit of the same id would replace it like a registration.
Its pingback is stored like any other (the nonce decides, once), and its result event carries
``origin: smoke`` so that consumers can skip it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.errors import StoreError
from pingback_guard.domain.task import CaptchaRequest, NewTask, TaskOrigin
from pingback_guard.logic.submit import issue_pingback

SMOKE_TASK_ID_PREFIX = "9"
SMOKE_TASK_ID_DIGITS = 20
# A reCAPTCHA v2 task as the smoke check's pingback completes it (a token-shaped answer).
SMOKE_REQUEST = CaptchaRequest(
    "userrecaptcha", {"googlekey": "pingback-guard-smoke", "pageurl": "https://smoke.invalid/"}
)
# A random 19-digit tail taken twice in a row is not a thing to retry more than once.
_ID_ATTEMPTS = 2


class NotAdminError(Exception):
    """Smoke tasks are for the stack's admin principal only (unset: for nobody)."""


@dataclass(frozen=True)
class SmokeTask:
    task_id: str
    pingback_url: str
    expires_at: float


def random_smoke_task_id() -> str:
    tail = SMOKE_TASK_ID_DIGITS - len(SMOKE_TASK_ID_PREFIX)
    return SMOKE_TASK_ID_PREFIX + "".join(secrets.choice("0123456789") for _ in range(tail))


class SmokeService:
    def __init__(
        self,
        store: TaskStore,
        admin_principal_arn: str,
        kept_seconds: float,
        *,
        new_task_id: Callable[[], str] = random_smoke_task_id,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._admin = admin_principal_arn
        self._kept_seconds = kept_seconds
        self._new_task_id = new_task_id
        self._clock = clock

    def create(self, principal: str, public_base_url: str, secret: str) -> SmokeTask:
        """A new synthetic task of ``principal`` and its pingback URL; NotAdminError, StoreError."""
        self._require_admin(principal)
        for _ in range(_ID_ATTEMPTS):
            now = self._clock()
            pingback = issue_pingback(public_base_url, secret, now)
            task = NewTask(
                self._new_task_id(),
                SMOKE_REQUEST,
                submitted_at=now,
                first_poll_at=now,  # never used: a smoke task is never due
                nonce=pingback.nonce,
                owner=principal,
                origin=TaskOrigin.SMOKE,
            )
            if self._store.record_smoke_task(task):
                return SmokeTask(task.task_id, pingback.url, now + self._kept_seconds)
        raise StoreError("no free smoke task id")

    def delete(self, principal: str, task_id: str) -> bool:
        """Delete the caller's smoke task; False when ``task_id`` is none of its smoke tasks."""
        self._require_admin(principal)
        return self._store.delete_smoke_task(task_id, principal)

    def _require_admin(self, principal: str) -> None:
        if not self._admin or principal != self._admin:
            raise NotAdminError
