"""How each client family reads "busy, try again": one row per worker-key dialect (a key's
``dialect``, set by `keys issue --dialect`), never a branch on a client's name.

- CaptchaAI's SDK (captchaai 1.0.1, core/orchestrator.py submit_task): ERROR_ZERO_BALANCE on
  in.php, then threadsinfo; working_threads >= threads -> it waits about 8 s and submits again.
  Any other code it does not know (MAX_USER_TURN, ERROR_NO_SLOT_AVAILABLE) raises to its caller,
  and so does any res.php answer but CAPCHA_NOT_READY while it polls: a key over its res.php
  budget is told "not ready" (it asks again 5 s later) and threadsinfo "busy".
- 2captcha clients (https://2captcha.com/api-docs/error-handling): MAX_USER_TURN for too many
  submits, ERROR_NO_SLOT_AVAILABLE when no slot is free, ERROR: 1005 for too many res.php reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard.domain.worker_keys import Dialect

NOT_READY = "CAPCHA_NOT_READY"


@dataclass(frozen=True)
class BusyAnswers:
    """``over_rate``: in.php over the key's request budget (None: the budget's own refusal);
    ``no_thread``: in.php with every thread of the key in flight; ``read_over_budget``: res.php
    get over the budget (None: the budget's own refusal); ``threadsinfo_shows_busy``: the client
    reads a busy answer from threadsinfo, so a rate refusal is noted there."""

    over_rate: str | None
    no_thread: str
    read_over_budget: str | None
    threadsinfo_shows_busy: bool


BUSY_ANSWERS = {
    Dialect.CAPTCHAAI: BusyAnswers(
        over_rate="ERROR_ZERO_BALANCE",
        no_thread="ERROR_ZERO_BALANCE",
        read_over_budget=NOT_READY,
        threadsinfo_shows_busy=True,
    ),
    Dialect.TWOCAPTCHA: BusyAnswers(
        over_rate=None,
        no_thread="ERROR_NO_SLOT_AVAILABLE",
        read_over_budget=None,
        threadsinfo_shows_busy=False,
    ),
}

# Whether a solved task's res.php JSON carries its answer in ``result`` too: CaptchaAI's SDK reads
# some kinds' answers there (captchaai 1.0.1 core/registry.py ``solution_key``); 2captcha's
# answer is ``request`` alone (https://2captcha.com/2captcha-api#solving_captchas, and
# 2captcha-python's ``extendedResponse`` hands every other field to its caller).
ANSWER_IN_RESULT = {Dialect.CAPTCHAAI: True, Dialect.TWOCAPTCHA: False}
