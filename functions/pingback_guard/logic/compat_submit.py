"""in.php spoken by the stack itself: a per-worker key, then the same submit as POST /tasks
(the protocol both endpoints share: logic/compat.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderRejectedError,
    TaskNotRecordedError,
)
from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.kinds.registry import InvalidFieldError, parse_provider_fields
from pingback_guard.logic.compat import (
    BAD_PARAMETERS,
    UNAVAILABLE,
    Event,
    Outcome,
    ProtocolAnswer,
    admitted_fields,
    provider_code_of,
)
from pingback_guard.logic.forwarding import is_forwardable_url
from pingback_guard.logic.request_budgets import KeyBudget
from pingback_guard.logic.submit import IssuedPingback, SubmitService
from pingback_guard.logic.worker_keys import WorkerKeys

GOOGLEKEY = "ERROR_GOOGLEKEY"
PAGEURL = "ERROR_PAGEURL"
BAD_PROXY = "ERROR_BAD_PROXY"
PINGBACK_FIELD = "pingback"
# Fields of the protocol itself, never part of what is solved.
CONTROL_FIELDS = frozenset({"key", "json", PINGBACK_FIELD, "header_acao"})


class InvalidFieldsError(ValueError):
    """Fields the provider would refuse; ``code`` is the provider's answer for them."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


# The provider's answer for a refused field; any other field is ERROR_BAD_PARAMETERS.
CODE_OF_FIELD = {
    "googlekey": GOOGLEKEY,
    "sitekey": GOOGLEKEY,
    "pageurl": PAGEURL,
    "proxy": BAD_PROXY,
    "proxytype": BAD_PROXY,
}


# 2captcha's own method names for what the stack's kinds name otherwise.
METHOD_ALIASES = {"geetest_v4": {"method": "geetest", "version": "4"}}


def in_php_method(fields: Mapping[str, str]) -> str:
    """The method a submit names; an uploaded ``file`` without one is a normal captcha (``post``),
    as 2captcha-python's README sends it (``solver.send(file=...)``)."""
    return fields.get("method") or ("post" if "file" in fields else "")


def parse_fields(fields: Mapping[str, str]) -> CaptchaRequest:
    """in.php fields -> the request, through the one validator every route uses."""
    method = in_php_method(fields)
    try:
        return parse_provider_fields({**fields, "method": method, **METHOD_ALIASES.get(method, {})})
    except InvalidFieldError as invalid:
        raise InvalidFieldsError(CODE_OF_FIELD.get(invalid.field, BAD_PARAMETERS)) from None


def forward_url_of(fields: Mapping[str, str], *, allow_loopback: bool) -> str | None:
    """The client's own pingback URL, if it sent one; a URL the stack will not call is refused."""
    raw = fields.get(PINGBACK_FIELD, "")
    if not raw:
        return None
    if not is_forwardable_url(raw, allow_loopback=allow_loopback):
        raise InvalidFieldsError(BAD_PARAMETERS)
    return raw


class CompatSubmit:
    """in.php: a per-worker key, then the same submit as POST /tasks."""

    def __init__(
        self,
        keys: WorkerKeys,
        service: SubmitService,
        parse: Callable[[Mapping[str, str]], CaptchaRequest] = parse_fields,
        *,
        budget: KeyBudget,
        allow_loopback_pingbacks: bool = False,
    ) -> None:
        self._keys = keys
        self._budget = budget
        self._service = service
        self._parse = parse
        self._allow_loopback = allow_loopback_pingbacks

    def submit(
        self,
        fields: Mapping[str, str] | Iterable[tuple[str, str]],
        issue_pingback: Callable[[], IssuedPingback],
    ) -> Outcome:
        """``fields`` may be read lazily (pairs, the handler's parser): the key is checked and
        charged as soon as it is read, and a refused one stops the reading there."""
        pairs = fields.items() if isinstance(fields, Mapping) else fields
        admitted = admitted_fields(self._keys, self._budget, pairs)
        if isinstance(admitted, Outcome):
            return admitted
        owner, read = admitted
        try:
            forward_url = forward_url_of(read, allow_loopback=self._allow_loopback)
            request = self._parse(
                {name: value for name, value in read.items() if name not in CONTROL_FIELDS}
            )
        except InvalidFieldsError as invalid:
            return Outcome(ProtocolAnswer.error(invalid.code), Event.REJECTED)
        try:
            task = self._service.submit(request, issue_pingback(), owner, forward_url)
        except PingbackGuardError as error:
            return _submit_failure(error)
        return Outcome(
            ProtocolAnswer.ok(task.task_id, f"OK|{task.task_id}"), Event.SUBMITTED, task.task_id
        )


def _submit_failure(error: PingbackGuardError) -> Outcome:
    if isinstance(error, ProviderAccountError):
        return Outcome(ProtocolAnswer.error(provider_code_of(error)), Event.ACCOUNT_ERROR)
    if isinstance(error, ProviderRejectedError):
        return Outcome(ProtocolAnswer.error(provider_code_of(error)), Event.REJECTED)
    if isinstance(error, TaskNotRecordedError):
        return Outcome(UNAVAILABLE, Event.NOT_RECORDED, error.task_id)
    return Outcome(UNAVAILABLE, Event.PROVIDER_UNAVAILABLE)
