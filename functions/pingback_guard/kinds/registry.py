"""Every kind the stack supports, and the one validator of a request's in.php fields.

``parse_provider_fields`` is the only place a CAPTCHA request is checked: the JSON routes
translate their documents into in.php fields first (``provider_fields_from_json``), the
in.php-compatible endpoint passes its form as it came.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from pingback_guard.domain.task import UNKNOWN_ERROR_CODE, CaptchaRequest, TokenLifetimes
from pingback_guard.kinds import (
    bls,
    captchafox,
    cloudflare_challenge,
    friendly_captcha,
    geetest,
    hcaptcha,
    image,
    lemin,
    recaptcha,
    turnstile,
)
from pingback_guard.kinds.base import Kind, ParsedAnswer
from pingback_guard.kinds.fields import SPELLINGS

KINDS: tuple[Kind, ...] = (
    recaptcha.KIND,
    hcaptcha.KIND,
    turnstile.KIND,
    image.BASE64,
    image.POST,
    geetest.KIND,
    cloudflare_challenge.KIND,
    bls.KIND,
    captchafox.KIND,
    friendly_captcha.KIND,
    lemin.KIND,
)
KIND_BY_METHOD: dict[str, Kind] = {method: kind for kind in KINDS for method in kind.methods}
METHODS = tuple(sorted(KIND_BY_METHOD))
KIND_NAMES = tuple(sorted({kind.name for kind in KINDS}))
# Fields of the protocol, not of a CAPTCHA: the caller handles them, a request never holds them.
PROTOCOL_FIELDS = frozenset({"key", "json", "header_acao"})
# A field name short and plain enough to be named back in a refusal.
NAMEABLE = re.compile(r"[A-Za-z0-9_.-]{1,40}")


class InvalidFieldError(ValueError):
    """A request field that cannot be sent to the provider; ``reason`` names the field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def kind_of(method: str | None) -> Kind | None:
    return KIND_BY_METHOD.get(method or "")


def parse_provider_fields(
    fields: Mapping[str, str], *, secrets_sent: bool = True
) -> CaptchaRequest:
    """The request these in.php fields (``method`` included) describe.

    ``secrets_sent=False`` checks a request whose secrets (proxy, cookies, images) were never
    given to the stack: a task the worker registers, or one the stack kept.
    """
    kind = _kind_named_by(fields.get("method"))
    given = _under_documented_names(
        (name, value)
        for name, value in fields.items()
        if name not in PROTOCOL_FIELDS and name != "method"
    )
    _refuse_unknown(kind, given)
    for name, value in given.items():
        if not isinstance(value, str):
            raise InvalidFieldError(name, f"{name} must be text")
        problem = kind.by_name[name].problem(value)
        if problem is not None:
            raise InvalidFieldError(name, problem)
    for spec in kind.fields:
        if spec.required and spec.name not in given and (secrets_sent or not spec.secret):
            raise InvalidFieldError(spec.name, f"{spec.name} is required for {fields['method']}")
    crossed = kind.cross_check(given)
    if crossed is not None:
        raise InvalidFieldError(*crossed)
    return CaptchaRequest(str(fields["method"]), given, kind.secret_fields & given.keys())


def _kind_named_by(method: object) -> Kind:
    kind = kind_of(method) if isinstance(method, str) else None
    if kind is None:
        raise InvalidFieldError("method", f"method must be one of {', '.join(METHODS)}")
    return kind


def _under_documented_names(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The fields under the names in.php documents (``useragent`` is ``userAgent``); one field
    given under two spellings with two values is refused: which one the client meant is unknown."""
    given: dict[str, str] = {}
    for name, value in pairs:
        documented = SPELLINGS.get(name, name)
        if documented in given and given[documented] != value:
            raise InvalidFieldError(documented, f"{documented} is given twice")
        given[documented] = value
    return given


def _refuse_unknown(kind: Kind, given: Mapping[str, object]) -> None:
    unknown = sorted(name for name in given if name not in kind.by_name)
    if not unknown:
        return
    name = unknown[0]
    shown = name if NAMEABLE.fullmatch(name) else "a field"
    allowed = ", ".join(["method", *sorted(kind.by_name)])
    method = next(iter(sorted(kind.methods)))
    raise InvalidFieldError(shown, f"{shown} is not a field of method {method}; allowed: {allowed}")


def parse_answer(request: CaptchaRequest | None, raw: str) -> ParsedAnswer:
    """The worker's parsed form of an answer; a task of unknown kind gets the text as it is.
    An answer that reads as a provider error code fits no kind."""
    kind = kind_of(request.method if request else None)
    if kind is None or request is None:
        parsed = ParsedAnswer({"text": raw}, fits=True)
    else:
        parsed = kind.parse_answer(raw, request.fields)
    if UNKNOWN_ERROR_CODE.fullmatch(raw):
        return replace(parsed, fits=False)
    return parsed


def polled_alone(method: str | None) -> bool:
    """Answers that may hold '|' cannot be told apart in an ids= batch; unknown kinds neither."""
    kind = kind_of(method)
    return kind is None or kind.answer_may_hold_pipe


def may_answer_with_user_agent(method: str | None) -> bool:
    """Answers that may come with the solver's user agent beside them (res.php's JSON only)."""
    kind = kind_of(method)
    return kind is not None and kind.answer_may_carry_user_agent


def _largest_request_bytes() -> int:
    """Every field of the largest kind at its bound, with room for JSON quoting and names."""
    return max(sum(spec.max_bytes + 64 for spec in kind.fields) for kind in KINDS) + 1024


MAX_REQUEST_BYTES = _largest_request_bytes()


def lifetime_seconds(lifetimes: TokenLifetimes, method: str | None) -> float | None:
    """The method's answer lifetime; None for an answer without one (image text, BLS cells);
    the shortest for a method the stack does not know (never fresh when it may not be)."""
    kind = kind_of(method)
    if kind is None:
        return lifetimes.shortest
    return lifetimes.named(kind.lifetime) if kind.lifetime else None


def expected_solve_seconds(method: str | None, browser_default: float) -> float:
    """When a task of this method is likely solved, before any is learned: the kind's own figure
    (images and BLS are read in seconds), else ``browser_default`` (ExpectedSolveSeconds)."""
    kind = kind_of(method)
    own = kind.expected_solve_seconds if kind else None
    return browser_default if own is None else own
