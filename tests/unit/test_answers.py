import pytest

from pingback_guard.provider.answers import AnswerKind, classify, classify_part
from tests.fakes import ODD_BUT_REAL_ANSWERS


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("CAPCHA_NOT_READY", AnswerKind.NOT_READY),
        ("ERROR_CAPTCHA_UNSOLVABLE", AnswerKind.TASK_FAILED),
        ("ERROR_BAD_DUPLICATES", AnswerKind.TASK_FAILED),
        *[
            (code, AnswerKind.TASK_PERMANENT)
            for code in (
                "ERROR_WRONG_CAPTCHA_ID",
                "ERROR_WRONG_ID_FORMAT",
                "ERROR_PAGEURL",
                "ERROR_GOOGLEKEY",
                "ERROR_WRONG_GOOGLEKEY",
                "ERROR_BAD_PARAMETERS",
                "ERROR_BAD_PROXY",
                "ERROR_TOKEN_EXPIRED",
                "ERROR_EMPTY_ACTION",
            )
        ],
        *[
            (code, AnswerKind.ACCOUNT)
            for code in (
                "ERROR_WRONG_USER_KEY",
                "ERROR_KEY_DOES_NOT_EXIST",
                "ERROR_ZERO_BALANCE",
                "ERROR_IP_NOT_ALLOWED",
            )
        ],
        ("ERROR_NO_SLOT_AVAILABLE", AnswerKind.RETRYABLE),
        ("MAX_USER_TURN", AnswerKind.RETRYABLE),
        *[(f"ERROR: 100{n}", AnswerKind.RETRYABLE) for n in range(1, 6)],
        ("ERROR_SOMETHING_NEW", AnswerKind.RETRYABLE),
        ("", AnswerKind.RETRYABLE),
    ],
)
def test_every_status_0_code_has_a_meaning(text: str, kind: AnswerKind) -> None:
    assert classify(text).kind is kind


@pytest.mark.parametrize(
    "answer",
    [
        "03AFcWeA4" + "a" * 900,
        "P1_eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.payload.sig",
        "0.zrSnRHO7h0HwSjSCU8oyzbjEtD8p",
        *ODD_BUT_REAL_ANSWERS,
        "ERRORS IN THE IMAGE",
        "я" * 2048,
    ],
)
def test_any_answer_part_is_the_answer_exactly_as_sent(answer: str) -> None:
    parsed = classify_part(answer)
    assert (parsed.kind, parsed.value) == (AnswerKind.READY, answer)


@pytest.mark.parametrize(
    ("part", "kind"),
    [
        ("CAPCHA_NOT_READY", AnswerKind.NOT_READY),
        ("ERROR_CAPTCHA_UNSOLVABLE", AnswerKind.TASK_FAILED),
        ("", AnswerKind.UNREADABLE),
        ("x" * 9000, AnswerKind.UNREADABLE),
    ],
)
def test_a_part_that_is_a_code_or_cannot_be_stored_is_not_an_answer(
    part: str, kind: AnswerKind
) -> None:
    assert classify_part(part).kind is kind


def test_an_unexpected_answer_is_described_not_copied() -> None:
    answer = classify("not a token\nbut maybe secret")
    assert "secret" not in answer.value and answer.value.startswith("UNEXPECTED_ANSWER")
