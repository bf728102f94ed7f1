"""What the provider's answers mean. Pure functions: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class ProviderAnswer:
    """One task's answer: ``value`` is the token when READY, else the provider's code."""

    kind: AnswerKind
    value: str

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


def classify(text: str) -> ProviderAnswer:
    """Classify a code res.php or in.php sent with status 0 (CAPCHA_NOT_READY or an error).

    An error code the stack does not know is retried, never taken for a task's failure."""
    value = text.strip()
    known = KIND_BY_CODE.get(value)
    if known is not None:
        return ProviderAnswer(known, value)
    if RATE_LIMIT_ERROR.fullmatch(value):
        return ProviderAnswer(AnswerKind.RETRYABLE, value)
    return ProviderAnswer(AnswerKind.RETRYABLE, _describe_unexpected(value))


def ready(answer: str) -> ProviderAnswer:
    """An answer res.php sent with status 1: the task's answer exactly as sent, whatever its
    shape (spaces, any script, JSON, '|'); only one too large to store, or empty, is retried."""
    if not is_storable_answer(answer):
        return ProviderAnswer(AnswerKind.RETRYABLE, f"UNEXPECTED_ANSWER(len={len(answer)})")
    return ProviderAnswer(AnswerKind.READY, answer)


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
