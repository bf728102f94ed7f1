"""The worker's own pingback (in.php's ``pingback``): where a stored result is forwarded, and the
words a 2captcha client reads for a task (res.php and the forward say the same).

The URL is kept with the task its owner submitted, and only that task's result is ever sent to
it: a forward cannot be pointed at another owner's task. A result event for a task with such a
URL is forwarded at least once (the function's retries, then its failure queue).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import TaskStatus
from pingback_guard.forward.sender import ForwardSender

MAX_FORWARD_URL_LENGTH = 2048
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
NOT_READY = "CAPCHA_NOT_READY"
UNSOLVABLE = "ERROR_CAPTCHA_UNSOLVABLE"
PROVIDER_CODE = re.compile(r"ERROR_[A-Z_]{1,60}")


def is_forwardable_url(url: str, *, allow_loopback: bool) -> bool:
    """https to another machine: the token travels in it. This machine only when allowed (a
    local run, http too): in Lambda, loopback is the function's own Runtime API."""
    if len(url) > MAX_FORWARD_URL_LENGTH or not url.isprintable():
        return False
    parts = urlsplit(url)
    if not parts.hostname or parts.username or parts.password:
        return False
    if parts.hostname in LOOPBACK_HOSTS or parts.hostname.startswith("127."):
        return allow_loopback and parts.scheme in {"http", "https"}
    return parts.scheme == "https"


def protocol_word(view: Mapping[str, Any]) -> tuple[bool, str]:
    """(solved, the token or the provider's word) for a task as GET /tasks/{id} shows it."""
    status = view.get("status")
    if status == TaskStatus.SOLVED.value and view.get("solution"):
        return True, str(view["solution"])
    if status == TaskStatus.PENDING.value:
        return False, NOT_READY
    error = str(view.get("error") or "")
    # An expired task had no answer in time: for the client it is unsolvable (submit again).
    return False, error if PROVIDER_CODE.fullmatch(error) else UNSOLVABLE


class ForwardOutcome(StrEnum):
    """Also the metric the handler counts."""

    SENT = "PingbackForwarded"
    NOTHING_TO_FORWARD = "PingbackForwardSkipped"  # no (allowed) URL, not final, no such task


class ResultForwarder:
    def __init__(self, store: TaskStore, sender: ForwardSender, *, allow_loopback: bool) -> None:
        self._store = store
        self._sender = sender
        self._allow_loopback = allow_loopback

    def forward(self, task_id: str, now: float) -> ForwardOutcome:
        """Send the task's result to its own forward URL; ForwardFailedError (and StoreError)
        are raised for the caller's retry."""
        task = self._store.get(task_id)
        if task is None or task.forward_url is None or task.status is TaskStatus.PENDING:
            return ForwardOutcome.NOTHING_TO_FORWARD
        if not is_forwardable_url(task.forward_url, allow_loopback=self._allow_loopback):
            return ForwardOutcome.NOTHING_TO_FORWARD
        _, code = protocol_word(task.view(now))
        self._sender.send(task.forward_url, task.task_id, code)
        return ForwardOutcome.SENT
