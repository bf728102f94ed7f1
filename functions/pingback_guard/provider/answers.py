"""What the provider's answers mean. Pure functions: no I/O.

Each provider's codes are data (``ProviderCodes``), read from that provider's documentation and
published client; the logic never branches on a provider's name. CAPTCHAAI is the default: the
stack's provider.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pingback_guard.domain.task import (
    TASK_FAILED_ERRORS,
    TASK_PERMANENT_ERRORS,
    is_error_code,
    is_storable_answer,
)

NOT_READY = "CAPCHA_NOT_READY"
ACCOUNT_ERRORS = frozenset(
    {
        "ERROR_WRONG_USER_KEY",
        "ERROR_KEY_DOES_NOT_EXIST",
        "ERROR_ZERO_BALANCE",
        "ERROR_IP_NOT_ALLOWED",
    }
)
RETRYABLE_ERRORS = frozenset({"ERROR_NO_SLOT_AVAILABLE", "MAX_USER_TURN"})
RATE_LIMIT_ERROR = re.compile(r"ERROR: ?100[1-5]")


class AnswerKind(StrEnum):
    READY = "ready"
    NOT_READY = "not_ready"
    TASK_FAILED = "task_failed"
    TASK_PERMANENT = "task_permanent"
    ACCOUNT = "account"
    RETRYABLE = "retryable"
    # The provider said "solved" (status 1) in a shape the client cannot read: asked again, and
    # counted (ProviderAnswerUnreadable, alarmed), never left to expire in silence.
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class ProviderAnswer:
    """One task's answer: ``value`` is the token when READY, else the provider's code.
    ``user_agent``: the solver's browser, sent beside a token that is bound to it."""

    kind: AnswerKind
    value: str
    user_agent: str | None = None

    @property
    def is_final(self) -> bool:
        return self.kind in {AnswerKind.READY, AnswerKind.TASK_FAILED, AnswerKind.TASK_PERMANENT}


KIND_BY_CODE: dict[str, AnswerKind] = {
    NOT_READY: AnswerKind.NOT_READY,
    **dict.fromkeys(TASK_FAILED_ERRORS, AnswerKind.TASK_FAILED),
    **dict.fromkeys(TASK_PERMANENT_ERRORS, AnswerKind.TASK_PERMANENT),
    **dict.fromkeys(ACCOUNT_ERRORS, AnswerKind.ACCOUNT),
    **dict.fromkeys(RETRYABLE_ERRORS, AnswerKind.RETRYABLE),
}


@dataclass(frozen=True)
class ProviderCodes:
    """One provider's reading of its codes. ``submit_busy_if_threads_full``: in.php codes that
    mean "every thread of the plan is busy" when res.php ``threadsinfo`` shows the plan full (then
    retryable), and the account's own error otherwise."""

    kind_by_code: Mapping[str, AnswerKind] = field(default_factory=lambda: KIND_BY_CODE)
    submit_busy_if_threads_full: frozenset[str] = frozenset()


# 2captcha: https://2captcha.com/api-docs/error-handling lists ERROR_ZERO_BALANCE as an account
# error and ERROR_NO_SLOT_AVAILABLE / MAX_USER_TURN as "wait and retry".
TWOCAPTCHA = ProviderCodes()
# CaptchaAI: its SDK (captchaai 1.0.1, core/orchestrator.py submit_task and
# diagnose_account_when_busy) reads ERROR_ZERO_BALANCE on in.php as "maybe all threads are busy":
# it asks threadsinfo, retries about 8 s later when working_threads >= threads, and raises "no
# active plan" otherwise. Its blog (blog.captchaai.com/error-zero-balance-payment-billing-
# troubleshooting) gives the code's other meaning, an account without funds.
CAPTCHAAI = ProviderCodes(submit_busy_if_threads_full=frozenset({"ERROR_ZERO_BALANCE"}))


def classify(text: str, codes: ProviderCodes = CAPTCHAAI) -> ProviderAnswer:
    """Classify a code res.php or in.php sent with status 0 (CAPCHA_NOT_READY or an error).

    An error code the stack does not know is retried, never taken for a task's failure."""
    value = text.strip()
    known = codes.kind_by_code.get(value)
    if known is not None:
        return ProviderAnswer(known, value)
    if RATE_LIMIT_ERROR.fullmatch(value):
        return ProviderAnswer(AnswerKind.RETRYABLE, value)
    return ProviderAnswer(AnswerKind.RETRYABLE, _describe_unexpected(value))


def ready(answer: str, user_agent: str | None = None) -> ProviderAnswer:
    """An answer res.php sent with status 1: the task's answer exactly as sent, whatever its
    shape (spaces, any script, JSON, '|'); one too large to store, or empty, is unreadable."""
    if not is_storable_answer(answer):
        return ProviderAnswer(AnswerKind.UNREADABLE, f"UNEXPECTED_ANSWER(len={len(answer)})")
    return ProviderAnswer(AnswerKind.READY, answer, user_agent or None)


def classify_part(part: str) -> ProviderAnswer:
    """One id's part of an ids= answer: a code the provider sends per task, else the answer."""
    if part in KIND_BY_CODE:
        return classify(part)
    return ready(part)


def is_status_code(code: str) -> bool:
    """A code about the request or the account (not ready, no slot, bad key), never a task's
    answer or a task's failure."""
    return code in KIND_BY_CODE and not is_error_code(code)


def _describe_unexpected(value: str) -> str:
    """An error code is safe to log; anything else might be an answer: describe, don't copy."""
    if value.startswith("ERROR") and len(value) <= 64 and value.isprintable():
        return value
    return f"UNEXPECTED_ANSWER(len={len(value)})"
