"""Tasks and their lifecycle: PENDING -> SOLVED | FAILED | EXPIRED.

A solution may replace FAILED or EXPIRED (a late callback or poll still wins), never the reverse:
once a task has a solution it keeps the first one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

TASK_ID_PATTERN = re.compile(r"[0-9]{1,20}")
MAX_CODE_LENGTH = 8192
ERROR_CODE_PREFIX = "ERROR"
SUPPORTED_METHODS = frozenset({"userrecaptcha", "hcaptcha", "turnstile"})
REQUEST_EXTRA_FIELDS = frozenset(
    {
        "version",
        "action",
        "min_score",
        "invisible",
        "enterprise",
        "soft_id",
        "proxy",
        "proxytype",
        "data-s",
        "userAgent",
        "cookies",
        "domain",
        "data",
        "pagedata",
    }
)


class TaskStatus(StrEnum):
    PENDING = "PENDING"
    SOLVED = "SOLVED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"


class DeliveryPath(StrEnum):
    CALLBACK = "callback"
    REPLAY = "replay"
    POLL = "poll"


class StoreOutcome(StrEnum):
    """What recording a result did to the table."""

    STORED = "stored"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    # A pingback for an id no task registered yet: kept provisionally (nonce, short TTL).
    STORED_UNREGISTERED = "stored_unregistered"
    # The pingback's proof (nonce, or the legacy whole secret) does not belong to this task.
    REJECTED = "rejected"


class SubmissionOutcome(StrEnum):
    CREATED = "created"
    RESULT_ALREADY_STORED = "result_already_stored"
    # The task id was already registered (a replayed or repeated registration): nothing written.
    ALREADY_REGISTERED = "already_registered"
    # A provisional result with another nonce (or none) sat under this id: discarded, PENDING now.
    PROVISIONAL_DISCARDED = "provisional_discarded"


PROVEN_PATHS = frozenset({DeliveryPath.CALLBACK, DeliveryPath.REPLAY})


def is_clean_text(value: object) -> bool:
    """A str that can be stored and sent as UTF-8 (no lone surrogates)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalise_task_id(raw: object) -> str:
    """Provider ids arrive as JSON numbers or strings; the table keys on the digit string."""
    if isinstance(raw, bool):
        raise ValueError("task id must be digits")
    text = str(raw).strip() if isinstance(raw, int | str) else ""
    if not TASK_ID_PATTERN.fullmatch(text):
        raise ValueError("task id must be 1 to 20 digits")
    return text


def is_error_code(code: str) -> bool:
    """A pingback or poll answer carrying a provider error instead of a token."""
    return code.startswith(ERROR_CODE_PREFIX)


@dataclass(frozen=True)
class CaptchaRequest:
    """What a worker asks the provider to solve."""

    method: str
    sitekey: str
    page_url: str
    extras: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NewTask:
    """A task the provider accepted, about to be recorded as PENDING."""

    task_id: str
    request: CaptchaRequest
    submitted_at: float
    first_poll_at: float
    nonce: str | None = None
    owner: str | None = None


@dataclass(frozen=True)
class TaskResult:
    """A solution (token) or a provider error for one task, from any delivery path."""

    task_id: str
    code: str
    delivered_via: DeliveryPath
    received_at: float
    finished_after: float | None = None
    nonce: str | None = None

    @property
    def is_failure(self) -> bool:
        return is_error_code(self.code)

    @property
    def needs_pingback_proof(self) -> bool:
        """Pingbacks (and their replays) came over the public route; poll answers did not."""
        return self.delivered_via in PROVEN_PATHS


@dataclass(frozen=True)
class DueTask:
    """A PENDING task whose next poll time has come, as the sparse due index projects it."""

    task_id: str
    due_at: float
    submitted_at: float
    poll_attempts: int
    last_checked_at: float | None = None
    method: str | None = None


@dataclass(frozen=True)
class Task:
    task_id: str
    status: TaskStatus
    request: CaptchaRequest | None
    submitted_at: float | None
    received_at: float | None
    solution: str | None
    delivered_via: DeliveryPath | None
    error: str | None
    poll_attempts: int
    due_at: float | None
    owner: str | None = None
    nonce: str | None = None

    def view(self, now: float) -> dict[str, Any]:
        """The task as the API returns it. The token's age tells whether it is still usable."""
        return {
            "task_id": self.task_id,
            "status": self.status.value,
            "solution": self.solution,
            "error": self.error,
            "delivered_via": self.delivered_via.value if self.delivered_via else None,
            "submitted_at": self.submitted_at,
            "received_at": self.received_at,
            "token_age_seconds": (
                round(now - self.received_at, 3)
                if self.solution is not None and self.received_at is not None
                else None
            ),
            "poll_attempts": self.poll_attempts,
        }
