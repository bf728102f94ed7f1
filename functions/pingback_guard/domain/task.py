"""Tasks and their lifecycle: PENDING -> SOLVED | FAILED | EXPIRED.

A solution may replace FAILED or EXPIRED (a late callback or poll still wins), never the reverse:
once a task has a solution it keeps the first one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

TASK_ID_PATTERN = re.compile(r"[0-9]{1,20}")
# The largest answer stored as sent (UTF-8 bytes, any script): a 4 KB OCR text or GeeTest JSON
# fits twice over, a reCAPTCHA token (about 2 KB) four times.
MAX_ANSWER_BYTES = 8192
# The provider's error codes for one task: only these mean it failed; any other answer is one.
TASK_FAILED_ERRORS = frozenset({"ERROR_CAPTCHA_UNSOLVABLE", "ERROR_BAD_DUPLICATES"})
TASK_PERMANENT_ERRORS = frozenset(
    {
        "ERROR_WRONG_CAPTCHA_ID",
        "ERROR_WRONG_ID_FORMAT",
        "ERROR_PAGEURL",
        "ERROR_GOOGLEKEY",
        "ERROR_WRONG_GOOGLEKEY",
        "ERROR_BAD_PARAMETERS",
        "ERROR_BAD_PROXY",
        "ERROR_TOKEN_EXPIRED",
        "ERROR_EMPTY_ACTION",
    }
)
# An answer shaped like a provider error code that no list above knows: kept (the provider sends a
# pingback once), but flagged as not fitting any kind.
UNKNOWN_ERROR_CODE = re.compile(r"ERROR_[A-Z0-9_]{1,60}")
# How requests were kept before they were in.php fields: read back from old items and messages.
LEGACY_SITEKEY_FIELD = {"userrecaptcha": "googlekey"}


class TaskStatus(StrEnum):
    PENDING = "PENDING"
    SOLVED = "SOLVED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"


class DeliveryPath(StrEnum):
    CALLBACK = "callback"
    REPLAY = "replay"
    POLL = "poll"
    READ_THROUGH = "read_through"


class StoreOutcome(StrEnum):
    """What recording a result did to the table."""

    STORED = "stored"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    # A pingback for an id no task registered yet: kept provisionally (nonce, short TTL).
    STORED_UNREGISTERED = "stored_unregistered"
    # The pingback's proof (nonce, or the legacy whole secret) does not belong to this task.
    REJECTED = "rejected"


@dataclass(frozen=True)
class RecordedSolution:
    """What recording a solution did, and the task it landed on as the conditional write itself
    handed it back (no read): None unless the write stored it."""

    outcome: StoreOutcome
    task: Task | None = None


class TaskOrigin(StrEnum):
    """Who recorded a task: this stack's submit (it made the URL the provider holds, so it always
    wins), a worker's registration of a task it submitted elsewhere (a claim), or the smoke
    check (an id the provider never handed out)."""

    SUBMIT = "submit"
    REGISTER = "register"
    # A synthetic task of `pingback-guard smoke` (logic/smoke.py): never sent to the provider,
    # never polled, and its result event says so (detail.origin) for consumers to skip.
    SMOKE = "smoke"


class SubmissionOutcome(StrEnum):
    CREATED = "created"
    RESULT_ALREADY_STORED = "result_already_stored"
    # The task id was already recorded by a submit (a replayed or repeated one): nothing written.
    ALREADY_REGISTERED = "already_registered"
    # A provisional result with another nonce (or none) sat under this id: discarded, PENDING now.
    PROVISIONAL_DISCARDED = "provisional_discarded"
    # A worker's registration of this id (anyone's) gave way to this stack's own submit.
    REGISTRATION_REPLACED = "registration_replaced"


class RegistrationOutcome(StrEnum):
    """What recording a worker's registration did; the first three answer alike (201)."""

    CREATED = "created"
    # A provisional result with another nonce sat under this id: discarded, PENDING now.
    PROVISIONAL_DISCARDED = "provisional_discarded"
    # Another registration of this id is PENDING: both are claims until a pingback decides.
    CONTESTED = "contested"
    # This stack's own submit (or a finished registration) holds the id: nothing written.
    HELD_ELSEWHERE = "held_elsewhere"
    # The caller's own registration, again.
    SAME_AGAIN = "same_again"
    DIFFERENT_DATA = "different_data"


class PingbackUrlClaim(StrEnum):
    """Whether a pingback URL from POST /pingback-urls may register a task id."""

    CLAIMED = "claimed"
    # Issued to another principal, used for another id, past its window, or never issued.
    REFUSED = "refused"


@dataclass(frozen=True)
class IssuedPingbackUrl:
    """A capability handed to one principal by POST /pingback-urls: registers one task, once,
    until ``register_by``; the record lives until ``expires_at``."""

    nonce: str
    owner: str
    issued_at: float
    register_by: float
    expires_at: float


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


class ReportVerdict(StrEnum):
    """What a worker says of a solved task's token (reportgood / reportbad)."""

    GOOD = "good"
    BAD = "bad"


class ReportClaim(StrEnum):
    """What the conditional write that claims a task's one report found."""

    CLAIMED = "claimed"
    UNKNOWN_TASK = "unknown_task"
    NOT_SOLVED = "not_solved"
    ALREADY_REPORTED = "already_reported"
    WINDOW_CLOSED = "report_window_closed"


@dataclass(frozen=True)
class ReportAttempt:
    """A report to claim at ``now`` for a task finished at or after ``window_start``, held as a
    lease of ``lease_seconds`` until confirmed. With an ``owner``, only that principal's task."""

    task_id: str
    verdict: ReportVerdict
    owner: str | None
    now: float
    window_start: float
    lease_seconds: float

    @property
    def lease_until(self) -> float:
        return self.now + self.lease_seconds


@dataclass(frozen=True)
class TokenLifetimes:
    """How long an answer is usable after the provider finished it (seconds), per lifetime a
    kind names (pingback_guard.kinds); each is a template Parameter. Image and BLS answers have
    none of their own."""

    recaptcha: float
    hcaptcha: float
    turnstile: float
    geetest: float
    cloudflare_challenge: float
    # CaptchaAI's docs give no lifetime for these tokens: the template's defaults are chosen
    # (README.md, "CAPTCHA kinds").
    captchafox: float = 120.0
    friendly_captcha: float = 300.0
    lemin: float = 120.0

    def named(self, name: str) -> float:
        return {
            "recaptcha": self.recaptcha,
            "hcaptcha": self.hcaptcha,
            "turnstile": self.turnstile,
            "geetest": self.geetest,
            "cloudflare_challenge": self.cloudflare_challenge,
            "captchafox": self.captchafox,
            "friendly_captcha": self.friendly_captcha,
            "lemin": self.lemin,
        }[name]

    @property
    def shortest(self) -> float:
        """For a result whose kind is unknown: never call a token fresh that may not be."""
        return min(
            self.recaptcha,
            self.hcaptcha,
            self.turnstile,
            self.geetest,
            self.cloudflare_challenge,
            self.captchafox,
            self.friendly_captcha,
            self.lemin,
        )


def normalise_task_id(raw: object) -> str:
    """Provider ids arrive as JSON numbers or strings; the table keys on the digit string."""
    if isinstance(raw, bool):
        raise ValueError("task id must be digits")
    text = str(raw).strip() if isinstance(raw, int | str) else ""
    if not TASK_ID_PATTERN.fullmatch(text):
        raise ValueError("task id must be 1 to 20 digits")
    return text


def is_error_code(code: str) -> bool:
    """A pingback or poll answer carrying one of the provider's task errors instead of an answer."""
    return code in TASK_FAILED_ERRORS or code in TASK_PERMANENT_ERRORS


def is_storable_answer(code: object) -> bool:
    """Any answer the provider can send, as sent: non-empty UTF-8 text up to MAX_ANSWER_BYTES."""
    if not isinstance(code, str) or not code:
        return False
    try:
        return len(code.encode("utf-8")) <= MAX_ANSWER_BYTES
    except UnicodeEncodeError:
        return False


@dataclass(frozen=True)
class CaptchaRequest:
    """What a worker asks the provider to solve: the in.php ``method`` and its other in.php fields.

    ``secret_fields`` names the fields sent to the provider and never kept (proxy, cookies, image
    bodies); pingback_guard.kinds.registry.parse_provider_fields is the only code that builds one
    from a worker's input.
    """

    method: str
    fields: dict[str, str] = field(default_factory=dict)
    secret_fields: frozenset[str] = field(default=frozenset(), compare=False)

    def without_secrets(self) -> CaptchaRequest:
        """What the stack keeps of the request: everything but its secret fields."""
        kept = {
            name: value for name, value in self.fields.items() if name not in self.secret_fields
        }
        return CaptchaRequest(self.method, kept)

    def to_document(self) -> dict[str, Any]:
        """The request as JSON and DynamoDB hold it."""
        return {"method": self.method, "fields": dict(self.fields)}

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> CaptchaRequest:
        """The inverse of to_document, and the older ``sitekey``/``page_url``/``extras`` shape;
        KeyError, TypeError or ValueError when it is neither."""
        method = required_text(document["method"])
        if "fields" in document:
            raw = document["fields"]
            if not isinstance(raw, Mapping):
                raise TypeError("fields must be an object")
            return cls(method, {required_text(k): required_text(v) for k, v in raw.items()})
        legacy = {
            LEGACY_SITEKEY_FIELD.get(method, "sitekey"): required_text(document["sitekey"]),
            "pageurl": required_text(document["page_url"]),
        }
        extras = document.get("extras", {})
        if not isinstance(extras, Mapping):
            raise TypeError("extras must be an object")
        legacy.update({required_text(k): required_text(v) for k, v in extras.items()})
        return cls(method, legacy)


def required_text(value: object) -> str:
    """The value when it is a str; TypeError otherwise (decoders turn it into their own error)."""
    if not isinstance(value, str):
        raise TypeError("expected text")
    return value


@dataclass(frozen=True)
class NewTask:
    """A task the provider accepted, about to be recorded as PENDING."""

    task_id: str
    request: CaptchaRequest
    submitted_at: float
    first_poll_at: float
    nonce: str | None = None
    owner: str | None = None
    origin: TaskOrigin = TaskOrigin.SUBMIT
    forward_url: str | None = None
    # The provider account it was submitted through (None: account 1; logic/accounts.py).
    provider_account: str | None = None


@dataclass(frozen=True)
class TaskResult:
    """A solution (token) or a provider error for one task, from any delivery path."""

    task_id: str
    code: str
    delivered_via: DeliveryPath
    received_at: float
    finished_after: float | None = None
    nonce: str | None = None
    # The solver's browser, sent by the provider beside a token bound to it.
    user_agent: str | None = None

    @property
    def is_failure(self) -> bool:
        return is_error_code(self.code)

    @property
    def needs_pingback_proof(self) -> bool:
        """Pingbacks (and their replays) came over the public route; poll answers did not."""
        return self.delivered_via in PROVEN_PATHS

    @property
    def finished_at_earliest(self) -> float:
        return self.received_at if self.finished_after is None else self.finished_after


@dataclass(frozen=True)
class DueTask:
    """A PENDING task whose next poll time has come, as the sparse due index projects it."""

    task_id: str
    due_at: float
    submitted_at: float
    poll_attempts: int
    last_checked_at: float | None = None
    method: str | None = None
    # Read from the task's item when the stack has more than one provider account.
    provider_account: str | None = None


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
    finished_after: float | None = None
    usable_until: float | None = None
    last_checked_at: float | None = None
    read_through_at: float | None = None
    reported: ReportVerdict | None = None
    reported_at: float | None = None
    origin: TaskOrigin | None = None
    # Other registrations of the same id (nonce -> owner) while no pingback has decided it.
    rivals: Mapping[str, str] = field(default_factory=dict)
    forward_url: str | None = None
    # The solver's browser the token is bound to, when the provider sent it.
    user_agent: str | None = None
    # The provider account it is read through (None: account 1; logic/accounts.py).
    provider_account: str | None = None

    @property
    def finished_at_earliest(self) -> float | None:
        return self.received_at if self.finished_after is None else self.finished_after

    @property
    def is_contested(self) -> bool:
        return bool(self.rivals)

    def claim_view(self) -> dict[str, Any]:
        """What a claimant of a contested registration sees until a pingback decides whose it
        is (only a pingback can: the poller leaves a contested task alone): no result."""
        return {"task_id": self.task_id, "status": TaskStatus.PENDING.value, "solution": None}

    def is_usable(self, now: float) -> bool:
        """Only a token with a known deadline still ahead is usable; unknown counts as not."""
        return (
            self.solution is not None and self.usable_until is not None and now < self.usable_until
        )

    def view(self, now: float) -> dict[str, Any]:
        """The task as the API returns it, with honest age bounds of its token.

        The age counts from the earliest moment the provider can have finished the token, so a
        token recovered late is never shown younger than it may be.
        """
        earliest = self.finished_at_earliest
        has_token = self.solution is not None
        return {
            "task_id": self.task_id,
            "status": self.status.value,
            "solution": self.solution,
            "error": self.error,
            "delivered_via": self.delivered_via.value if self.delivered_via else None,
            "submitted_at": self.submitted_at,
            "finished_at_earliest": earliest,
            "finished_at_latest": self.received_at,
            "usable_until": self.usable_until if has_token else None,
            "usable": self.is_usable(now),
            "token_age_seconds": (
                round(now - earliest, 3) if has_token and earliest is not None else None
            ),
            "poll_attempts": self.poll_attempts,
            "reported": self.reported.value if self.reported else None,
            "user_agent": self.user_agent,
        }
