import pytest

from pingback_guard.provider.answers import AnswerKind, classify


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
        ("03AFcWeA4" + "a" * 900, AnswerKind.READY),
        ("P1_eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.payload.sig", AnswerKind.READY),
        ("0.zrSnRHO7h0HwSjSCU8oyzbjEtD8p", AnswerKind.READY),
        ("", AnswerKind.RETRYABLE),
        ("has space", AnswerKind.RETRYABLE),
        ("x" * 9000, AnswerKind.RETRYABLE),
    ],
)
def test_every_provider_answer_has_a_meaning(text: str, kind: AnswerKind) -> None:
    assert classify(text).kind is kind


def test_an_unexpected_answer_is_described_not_copied() -> None:
    answer = classify("not a token\nbut maybe secret")
    assert "secret" not in answer.value and answer.value.startswith("UNEXPECTED_ANSWER")
