"""What the provider's answers mean. Pure functions: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pingback_guard.domain.task import MAX_CODE_LENGTH

NOT_READY = "CAPCHA_NOT_READY"
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
# reCAPTCHA, hCaptcha and Turnstile tokens are base64url and dots; '=', ':' and '|' allow other
# providers' formats. Anything else (quotes, brackets, spaces) is refused at the edge.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_.=:|-]+")


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
    """Classify one answer text (a token, CAPCHA_NOT_READY or an error code)."""
    value = text.strip()
    known = KIND_BY_CODE.get(value)
    if known is not None:
        return ProviderAnswer(known, value)
    if RATE_LIMIT_ERROR.fullmatch(value):
        return ProviderAnswer(AnswerKind.RETRYABLE, value)
    if value.startswith("ERROR") or not is_plausible_token(value):
        # Unknown errors and garbage are retried until the retention window ends, never trusted.
        return ProviderAnswer(AnswerKind.RETRYABLE, _describe_unexpected(value))
    return ProviderAnswer(AnswerKind.READY, value)


def is_known_task_error(code: str) -> bool:
    """An error the provider reports for one task: it may mark that task FAILED."""
    return code in TASK_FAILED_ERRORS or code in TASK_PERMANENT_ERRORS


def is_plausible_token(value: str) -> bool:
    return 0 < len(value) <= MAX_CODE_LENGTH and bool(TOKEN_PATTERN.fullmatch(value))


def _describe_unexpected(value: str) -> str:
    """An error code is safe to log; anything else might be a token: describe, don't copy."""
    if value.startswith("ERROR") and len(value) <= 64 and value.isprintable():
        return value
    return f"UNEXPECTED_ANSWER(len={len(value)})"
