"""in.php spoken by the stack itself: a per-worker key, then the same submit as POST /tasks
(the protocol both endpoints share: logic/compat.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderRejectedError,
    ProviderThreadsBusyError,
    StoreError,
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
    keyed_fields,
    provider_code_of,
)
from pingback_guard.logic.dialects import BUSY_ANSWERS
from pingback_guard.logic.forwarding import is_forwardable_url
from pingback_guard.logic.key_threads import KeyThreads
from pingback_guard.logic.request_budgets import KeyBudget
from pingback_guard.logic.submit import IssuedPingback, SubmitService
from pingback_guard.logic.worker_keys import KeyHolder, WorkerKeys

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
        threads: KeyThreads | None = None,
        allow_loopback_pingbacks: bool = False,
    ) -> None:
        self._keys = keys
        self._budget = budget
        self._threads = threads
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
        keyed = keyed_fields(self._keys, self._budget, pairs)
        if isinstance(keyed, Outcome):
            return keyed
        holder, read = keyed.holder, keyed.fields
        if keyed.over_budget is not None:
            return self._over_budget(holder, keyed.over_budget)
        try:
            forward_url = forward_url_of(read, allow_loopback=self._allow_loopback)
            request = self._parse(
                {name: value for name, value in read.items() if name not in CONTROL_FIELDS}
            )
        except InvalidFieldsError as invalid:
            return Outcome(ProtocolAnswer.error(invalid.code), Event.REJECTED)
        token = self._thread_for(holder)
        if isinstance(token, Outcome):
            return token
        return self._submit(request, issue_pingback, holder, forward_url, token)

    def _thread_for(self, holder: KeyHolder) -> str | Outcome | None:
        """The submit's thread (its token; None without thread accounting), or the answer for a
        key whose threads are all in flight."""
        if self._threads is None:
            return None
        try:
            token = self._threads.reserve(holder)
            if token is not None:
                return token
            answers = BUSY_ANSWERS[holder.dialect]
            if answers.threadsinfo_shows_busy:
                # The client asks threadsinfo next: a thread freed in between must not read as
                # "no plan" (CaptchaAI's SDK then raises instead of retrying).
                self._threads.refused_busy(holder)
        except StoreError:
            return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
        refused = ProtocolAnswer.error(answers.no_thread)
        return Outcome(refused, Event.THREADS_BUSY, key_id=holder.key_id)

    def _submit(
        self,
        request: CaptchaRequest,
        issue_pingback: Callable[[], IssuedPingback],
        holder: KeyHolder,
        forward_url: str | None,
        token: str | None,
    ) -> Outcome:
        """The submit, its thread (``token``) kept by its task or freed when it made none."""
        try:
            task = self._service.submit(request, issue_pingback(), holder.owner, forward_url)
        except ProviderThreadsBusyError:
            self._free_thread(holder, token, None)
            return self._provider_busy(holder)
        except PingbackGuardError as error:
            self._free_thread(holder, token, None)
            return _submit_failure(error)
        self._free_thread(holder, token, task.task_id)
        return Outcome(
            ProtocolAnswer.ok(task.task_id, f"OK|{task.task_id}"), Event.SUBMITTED, task.task_id
        )

    def _provider_busy(self, holder: KeyHolder) -> Outcome:
        """Every provider account's threads in use: the key's own client is told "busy" as it
        reads it (and threadsinfo shows it busy, for CaptchaAI's SDK), never an outage."""
        answers = BUSY_ANSWERS[holder.dialect]
        if self._threads is not None and answers.threadsinfo_shows_busy:
            try:
                self._threads.refused_busy(holder)
            except StoreError:
                return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
        busy = ProtocolAnswer.error(answers.no_thread)
        return Outcome(busy, Event.PROVIDER_UNAVAILABLE, key_id=holder.key_id)

    def _free_thread(self, holder: KeyHolder, token: str | None, task_id: str | None) -> None:
        """The thread passes to the task, or is freed; a store failure leaves it to its lease."""
        if self._threads is None or token is None:
            return
        try:
            if task_id is None:
                self._threads.abandon(holder, token)
            else:
                self._threads.settle(holder, token, task_id)
        except StoreError:
            return

    def _over_budget(self, holder: KeyHolder, refused: Outcome) -> Outcome:
        """A key over its request budget gets the answer its own client reads as "busy"."""
        answers = BUSY_ANSWERS[holder.dialect]
        if refused.event is not Event.OVER_BUDGET or answers.over_rate is None:
            return refused
        if self._threads and answers.threadsinfo_shows_busy:
            try:
                self._threads.refused_busy(holder)
            except StoreError:
                return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
        return Outcome(ProtocolAnswer.error(answers.over_rate), refused.event, key_id=holder.key_id)


def _submit_failure(error: PingbackGuardError) -> Outcome:
    if isinstance(error, ProviderAccountError):
        return Outcome(ProtocolAnswer.error(provider_code_of(error)), Event.ACCOUNT_ERROR)
    if isinstance(error, ProviderRejectedError):
        return Outcome(ProtocolAnswer.error(provider_code_of(error)), Event.REJECTED)
    if isinstance(error, TaskNotRecordedError):
        return Outcome(UNAVAILABLE, Event.NOT_RECORDED, error.task_id)
    return Outcome(UNAVAILABLE, Event.PROVIDER_UNAVAILABLE)
