"""What a CAPTCHA kind states: its in.php methods and fields, how its answers look and last."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pingback_guard.kinds.fields import Field


@dataclass(frozen=True)
class ParsedAnswer:
    """An answer read for the worker. ``fits`` is False when the answer does not look like what
    its kind returns: it is then still the answer (stored and delivered as sent), only flagged."""

    fields: dict[str, Any]
    fits: bool = True


# (raw answer, the request's kept fields) -> the parsed form; never raises.
AnswerParser = Callable[[str, Mapping[str, str]], ParsedAnswer]
# Rules across fields (GeeTest v3 needs challenge, v4 does not): (field, reason) or None.
CrossCheck = Callable[[Mapping[str, str]], tuple[str, str] | None]


def no_cross_check(_fields: Mapping[str, str]) -> tuple[str, str] | None:
    return None


def as_text(raw: str, _request: Mapping[str, str]) -> ParsedAnswer:
    return ParsedAnswer({"text": raw})


@dataclass(frozen=True)
class Kind:
    """One CAPTCHA kind of the provider.

    ``lifetime`` names the TokenLifetimes entry (a template Parameter) of its answers, None when an
    answer has no lifetime of its own (an image's text). ``answer_may_hold_pipe``: res.php joins an
    ``ids=`` batch's answers with '|', so these kinds are polled one id per request.
    ``answer_may_carry_user_agent``: the provider may send the solver's user agent beside the
    answer (in res.php's JSON, never in an ``ids=`` batch).
    ``sitekey_field`` is the in.php field the JSON routes' ``sitekey`` stands for.
    ``expected_solve_seconds``: when its answer is likely ready until solve times are learned;
    None for browser kinds, solved in tens of seconds: the template's ExpectedSolveSeconds.
    """

    name: str
    methods: frozenset[str]
    fields: tuple[Field, ...]
    answer_may_hold_pipe: bool
    lifetime: str | None
    expected_solve_seconds: float | None
    parse_answer: AnswerParser = as_text
    sitekey_field: str | None = None
    cross_check: CrossCheck = no_cross_check
    answer_may_carry_user_agent: bool = False
    by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {f.name: f for f in self.fields})

    @property
    def secret_fields(self) -> frozenset[str]:
        return frozenset(f.name for f in self.fields if f.secret)
