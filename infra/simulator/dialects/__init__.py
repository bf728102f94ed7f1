"""One module per provider dialect of in.php/res.php: which submits it takes, what it answers.

A dialect decides a submit's checks and its solution (text, JSON field, user agent), the answer
a full thread plan gets by default, and whether res.php knows ``action=threadsinfo``. Everything
else (keys, ids, polling, batches, reports, pingbacks, the thread plan) is the provider's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Protocol

from infra.simulator.answers import Solution, TokenLengths

CAPTCHAAI: Final = "captchaai"
TWOCAPTCHA: Final = "2captcha"
DIALECT_NAMES: Final = (CAPTCHAAI, TWOCAPTCHA)


class Dialect(Protocol):
    name: str
    default_busy_answer: str
    answers_threadsinfo: bool

    def submit_error(self, params: Mapping[str, str]) -> str | None:
        """The in.php error code for a submit this provider refuses, or None."""
        ...

    def solve(
        self, seed: int, task_id: str, params: Mapping[str, str], lengths: TokenLengths
    ) -> Solution:
        """The answer of a solved task, decided from the seed and the id."""
        ...


def dialect_named(name: str) -> Dialect:
    # Imported here: each dialect module imports this one for the names above.
    from infra.simulator.dialects.captchaai import CaptchaAiDialect
    from infra.simulator.dialects.twocaptcha import TwoCaptchaDialect

    dialects: dict[str, Dialect] = {CAPTCHAAI: CaptchaAiDialect(), TWOCAPTCHA: TwoCaptchaDialect()}
    return dialects[name]
