"""The in.php / res.php protocol (2captcha, CaptchaAI) spoken by the stack itself.

A 2captcha client pointed at the stack submits through the stack (our per-task pingback URL, our
record, our three nets) and reads results from the table, with the read-through. Its answers are
the provider's: the same words, the same error codes, plain text or ``json=1``. A key is a
per-worker key (logic/worker_keys.py) that names an owner: the same scoping as the IAM routes.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderError,
    ProviderRejectedError,
    StoreError,
    TaskNotRecordedError,
)
from pingback_guard.domain.task import (
    CaptchaRequest,
    ReportClaim,
    ReportVerdict,
    normalise_task_id,
)
from pingback_guard.domain.worker_keys import digest_of
from pingback_guard.kinds.registry import InvalidFieldError, parse_provider_fields
from pingback_guard.logic.forwarding import is_forwardable_url, protocol_word
from pingback_guard.logic.get_task import Lookup, TaskQuery
from pingback_guard.logic.report import ReportService
from pingback_guard.logic.request_budgets import BalanceSource, KeyBudget
from pingback_guard.logic.submit import IssuedPingback, SubmitService
from pingback_guard.logic.worker_keys import KeyRefusal, WorkerKeys

REPORT_RECORDED = "OK_REPORT_RECORDED"
WRONG_CAPTCHA_ID = "ERROR_WRONG_CAPTCHA_ID"
WRONG_ID_FORMAT = "ERROR_WRONG_ID_FORMAT"
BAD_PARAMETERS = "ERROR_BAD_PARAMETERS"
EMPTY_ACTION = "ERROR_EMPTY_ACTION"
NO_SLOT = "ERROR_NO_SLOT_AVAILABLE"
GOOGLEKEY = "ERROR_GOOGLEKEY"
PAGEURL = "ERROR_PAGEURL"
BAD_PROXY = "ERROR_BAD_PROXY"
PINGBACK_FIELD = "pingback"
# Fields of the protocol itself, never part of what is solved.
CONTROL_FIELDS = frozenset({"key", "json", PINGBACK_FIELD, "header_acao"})
JSON_FLAGS = frozenset({"1", "true"})
MAX_IDS = 100
PROVIDER_CODE = re.compile(r"ERROR_[A-Z_]{1,60}")
REPORT_ANSWERS = {
    ReportClaim.UNKNOWN_TASK: WRONG_CAPTCHA_ID,
    ReportClaim.NOT_SOLVED: WRONG_CAPTCHA_ID,
    ReportClaim.ALREADY_REPORTED: "ERROR_DUPLICATE_REPORT",
    ReportClaim.WINDOW_CLOSED: "ERROR_REPORT_NOT_RECORDED",
}


@dataclass(frozen=True)
class ProtocolAnswer:
    """One answer: ``plain`` is the text sent without ``json=1``; ``http_status`` is 200 except
    when the stack itself cannot answer now (503: clients retry a failed request)."""

    status: int
    request: str
    plain: str
    http_status: int = 200

    @classmethod
    def error(cls, code: str, http_status: int = 200) -> ProtocolAnswer:
        return cls(0, code, code, http_status)

    @classmethod
    def ok(cls, request: str, plain: str | None = None) -> ProtocolAnswer:
        return cls(1, request, request if plain is None else plain)

    def render(self, as_json: bool) -> str:
        if as_json:
            return json.dumps(
                {"status": self.status, "request": self.request}, separators=(",", ":")
            )
        return self.plain


UNAVAILABLE = ProtocolAnswer.error(NO_SLOT, http_status=503)


class Event(StrEnum):
    """What happened, also the metric the handler counts for it."""

    KEY_REFUSED = "CompatKeyRefused"
    OVER_BUDGET = "CompatKeyOverBudget"
    REJECTED = "SubmitRejected"
    SUBMITTED = "TaskSubmitted"
    NOT_RECORDED = "SubmitNotRecorded"
    ACCOUNT_ERROR = "ProviderAccountError"
    PROVIDER_UNAVAILABLE = "ProviderRetryableError"
    STORE_UNAVAILABLE = "CompatStoreUnavailable"
    ANSWERED = "CompatAnswered"
    REPORTED = "CompatReported"


@dataclass(frozen=True)
class Outcome:
    answer: ProtocolAnswer
    event: Event
    task_id: str | None = None
    lookups: list[tuple[str, Lookup]] = field(default_factory=list)
    # The id (not the key) of a key over its budget: what an operator revokes.
    key_id: str | None = None


def wants_json(fields: Mapping[str, str]) -> bool:
    return fields.get("json", "").lower() in JSON_FLAGS


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
        """``fields`` may be read lazily (pairs, the handler's parser): the key is checked as soon
        as it is read, and a refused one stops the reading there."""
        keyed = _keyed_fields(self._keys, fields.items() if isinstance(fields, Mapping) else fields)
        if isinstance(keyed, Outcome):
            return keyed
        owner, read = keyed
        admitted = _within_budget(self._budget, read["key"], owner)
        if isinstance(admitted, Outcome):
            return admitted
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


def _keyed_fields(
    keys: WorkerKeys, pairs: Iterable[tuple[str, str]]
) -> tuple[str, dict[str, str]] | Outcome:
    """The key's owner and every field, or the answer for a key that speaks for nobody, given as
    soon as that key is read: nothing after it is read. A repeated name keeps its last value
    (PHP's form), so each new key value read is checked."""
    fields: dict[str, str] = {}
    owner: str | Outcome | None = None
    for name, value in pairs:
        if name == "key" and (owner is None or value != fields["key"]):
            owner = _owner(keys, {"key": value})
            if isinstance(owner, Outcome):
                return owner
        fields[name] = value
    if owner is None:
        owner = _owner(keys, fields)
    return owner if isinstance(owner, Outcome) else (owner, fields)


def _owner(keys: WorkerKeys, fields: Mapping[str, str]) -> str | Outcome:
    """The key's owner, or the answer for a key that speaks for nobody."""
    try:
        owner = keys.owner_of(fields.get("key"))
    except StoreError:
        return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
    if isinstance(owner, KeyRefusal):
        return Outcome(ProtocolAnswer.error(owner.value), Event.KEY_REFUSED)
    return owner


def _admitted(keys: WorkerKeys, budget: KeyBudget, fields: Mapping[str, str]) -> str | Outcome:
    """The key's owner when the key speaks for one and this request fits the key's budget;
    otherwise the answer, and the request goes no further (never to the provider)."""
    owner = _owner(keys, fields)
    if isinstance(owner, Outcome):
        return owner
    return _within_budget(budget, fields["key"], owner)


def _within_budget(budget: KeyBudget, key: str, owner: str) -> str | Outcome:
    key_id = digest_of(key).key_id
    try:
        if budget.admits(key_id):
            return owner
    except StoreError:
        return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
    return Outcome(ProtocolAnswer.error(budget.refusal), Event.OVER_BUDGET, key_id=key_id)


def _submit_failure(error: PingbackGuardError) -> Outcome:
    if isinstance(error, ProviderAccountError):
        return Outcome(ProtocolAnswer.error(_code_of(error)), Event.ACCOUNT_ERROR)
    if isinstance(error, ProviderRejectedError):
        return Outcome(ProtocolAnswer.error(_code_of(error)), Event.REJECTED)
    if isinstance(error, TaskNotRecordedError):
        return Outcome(UNAVAILABLE, Event.NOT_RECORDED, error.task_id)
    return Outcome(UNAVAILABLE, Event.PROVIDER_UNAVAILABLE)


class CompatResults:
    """res.php: get (id or ids), reportgood/reportbad, getbalance, for the key's owner."""

    def __init__(
        self,
        keys: WorkerKeys,
        query: TaskQuery,
        reports: ReportService,
        balance: BalanceSource,
        clock: Callable[[], float] = time.time,
        *,
        budget: KeyBudget,
    ) -> None:
        self._keys = keys
        self._query = query
        self._reports = reports
        self._balance_source = balance
        self._clock = clock
        self._budget = budget

    def answer(self, fields: Mapping[str, str]) -> Outcome:
        owner = _admitted(self._keys, self._budget, fields)
        if isinstance(owner, Outcome):
            return owner
        action = fields.get("action", "")
        try:
            if action == "get":
                return self._get(fields, owner)
            if action in {"reportgood", "reportbad"}:
                return self._report(fields.get("id", ""), action, owner)
            if action == "getbalance":
                return self._balance()
        except StoreError:
            return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
        return Outcome(
            ProtocolAnswer.error(BAD_PARAMETERS if action else EMPTY_ACTION), Event.ANSWERED
        )

    def _get(self, fields: Mapping[str, str], owner: str) -> Outcome:
        if "ids" in fields:
            raw_ids = fields["ids"].split(",")
            if not fields["ids"] or len(raw_ids) > MAX_IDS:
                return Outcome(ProtocolAnswer.error(BAD_PARAMETERS), Event.ANSWERED)
            lookups: list[tuple[str, Lookup]] = []
            parts = [self._describe(raw.strip(), owner, lookups)[1] for raw in raw_ids]
            joined = "|".join(parts)
            return Outcome(ProtocolAnswer.ok(joined), Event.ANSWERED, lookups=lookups)
        lookups = []
        solved, text = self._describe(fields.get("id", ""), owner, lookups)
        answer = ProtocolAnswer.ok(text, f"OK|{text}") if solved else ProtocolAnswer.error(text)
        return Outcome(answer, Event.ANSWERED, lookups=lookups)

    def _describe(
        self, raw_id: str, owner: str, lookups: list[tuple[str, Lookup]]
    ) -> tuple[bool, str]:
        """(solved, the token or the provider's word for the task). Another owner's task and
        an unknown one are both ERROR_WRONG_CAPTCHA_ID."""
        try:
            task_id = normalise_task_id(raw_id)
        except ValueError:
            return False, WRONG_ID_FORMAT
        found = self._query.look(task_id, now=self._clock(), principal=owner)
        if found is None:
            return False, WRONG_CAPTCHA_ID
        lookups.append((task_id, found))
        return protocol_word(found.view)

    def _report(self, raw_id: str, action: str, owner: str) -> Outcome:
        try:
            task_id = normalise_task_id(raw_id)
        except ValueError:
            return Outcome(ProtocolAnswer.error(WRONG_ID_FORMAT), Event.ANSWERED)
        verdict = ReportVerdict.GOOD if action == "reportgood" else ReportVerdict.BAD
        try:
            claim = self._reports.report(task_id, verdict, owner)
        except ProviderRejectedError as error:
            return Outcome(ProtocolAnswer.error(_code_of(error)), Event.ANSWERED, task_id)
        except PingbackGuardError:
            return Outcome(UNAVAILABLE, Event.PROVIDER_UNAVAILABLE, task_id)
        if claim is not ReportClaim.CLAIMED:
            return Outcome(ProtocolAnswer.error(REPORT_ANSWERS[claim]), Event.ANSWERED, task_id)
        return Outcome(ProtocolAnswer.ok(REPORT_RECORDED), Event.REPORTED, task_id)

    def _balance(self) -> Outcome:
        """The provider account's balance, which the stack spends for every worker: cached for
        the stack (logic/request_budgets.py), so no key can make the provider count its polls."""
        try:
            balance = self._balance_source.balance()
        except ProviderAccountError as error:
            return Outcome(ProtocolAnswer.error(_code_of(error)), Event.ACCOUNT_ERROR)
        except PingbackGuardError:
            return Outcome(UNAVAILABLE, Event.PROVIDER_UNAVAILABLE)
        return Outcome(ProtocolAnswer.ok(str(balance)), Event.ANSWERED)


def _code_of(error: ProviderError) -> str:
    return error.code if PROVIDER_CODE.fullmatch(error.code) else BAD_PARAMETERS
