"""The in.php / res.php protocol (2captcha, CaptchaAI) spoken by the stack itself.

A 2captcha client pointed at the stack submits through the stack (our per-task pingback URL, our
record, our three nets) and reads results from the table, with the read-through. Its answers are
the provider's: the same words, the same error codes, plain text or ``json=1``. A key is a
per-worker key (logic/worker_keys.py) that names an owner: the same scoping as the IAM routes.

This module holds what both endpoints share; in.php is logic/compat_submit.py, res.php
logic/compat_results.py (each function loads only its own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from pingback_guard.domain.errors import ProviderError, StoreError
from pingback_guard.domain.worker_keys import digest_of
from pingback_guard.logic.worker_keys import KeyHolder, KeyRefusal, WorkerKeys

if TYPE_CHECKING:
    from pingback_guard.logic.get_task import Lookup
    from pingback_guard.logic.request_budgets import KeyBudget


WRONG_CAPTCHA_ID = "ERROR_WRONG_CAPTCHA_ID"
WRONG_ID_FORMAT = "ERROR_WRONG_ID_FORMAT"
BAD_PARAMETERS = "ERROR_BAD_PARAMETERS"
EMPTY_ACTION = "ERROR_EMPTY_ACTION"
NO_SLOT = "ERROR_NO_SLOT_AVAILABLE"
JSON_FLAGS = frozenset({"1", "true"})
PROVIDER_CODE = re.compile(r"ERROR_[A-Z_]{1,60}")


@dataclass(frozen=True)
class ProtocolAnswer:
    """One answer: ``plain`` is the text sent without ``json=1``; ``http_status`` is 200 except
    when the stack itself cannot answer now (503: clients retry a failed request)."""

    status: int
    request: str
    plain: str
    http_status: int = 200
    # More fields of the JSON answer (threadsinfo's counts, a token's user_agent).
    extra: tuple[tuple[str, object], ...] = ()

    @classmethod
    def error(cls, code: str, http_status: int = 200) -> ProtocolAnswer:
        return cls(0, code, code, http_status)

    @classmethod
    def ok(cls, request: str, plain: str | None = None) -> ProtocolAnswer:
        return cls(1, request, request if plain is None else plain)

    def render(self, as_json: bool) -> str:
        if as_json:
            return json.dumps(
                {"status": self.status, "request": self.request, **dict(self.extra)},
                separators=(",", ":"),
            )
        return self.plain


UNAVAILABLE = ProtocolAnswer.error(NO_SLOT, http_status=503)


class Event(StrEnum):
    """What happened, also the metric the handler counts for it."""

    KEY_REFUSED = "CompatKeyRefused"
    OVER_BUDGET = "CompatKeyOverBudget"
    THREADS_BUSY = "CompatKeyThreadsBusy"
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


def key_holder(keys: WorkerKeys, fields: Mapping[str, str]) -> KeyHolder | Outcome:
    """The key's holder, or the answer for a key that speaks for nobody."""
    try:
        holder = keys.holder_of(fields.get("key"))
    except StoreError:
        return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
    if isinstance(holder, KeyRefusal):
        return Outcome(ProtocolAnswer.error(holder.value), Event.KEY_REFUSED)
    return holder


@dataclass(frozen=True)
class KeyedRequest:
    """A request whose key speaks for a holder: its fields, and the budget's refusal when the
    key is over its budget (the caller answers it in the key's own dialect)."""

    holder: KeyHolder
    fields: dict[str, str]
    over_budget: Outcome | None


def keyed_fields(
    keys: WorkerKeys, budget: KeyBudget, pairs: Iterable[tuple[str, str]]
) -> KeyedRequest | Outcome:
    """The request's key holder and every field, or the answer that refuses it, given as soon
    as it is known: nothing after it is read. The first ``key`` read is checked and charged to
    its budget where it is read (one lookup and one budget write per request, however many keys
    follow); a second, different key refuses the request (PHP would answer for the last one, so
    a request must not be admitted under one key and read as another's). A key over its budget
    still has its request read (bounded by the parser), so the refusal can say what its client
    reads as "busy" for that action. A request with no key is read whole, then refused."""
    fields: dict[str, str] = {}
    holder: KeyHolder | None = None
    over_budget: Outcome | None = None
    for name, value in pairs:
        if name == "key":
            if holder is None:
                found = key_holder(keys, {"key": value})
                if isinstance(found, Outcome):
                    return found
                holder = found
                over_budget = _budget_refusal(budget, value, holder.owner)
                if over_budget is not None and over_budget.event is not Event.OVER_BUDGET:
                    return over_budget
            elif value != fields["key"]:
                return Outcome(ProtocolAnswer.error(KeyRefusal.MALFORMED.value), Event.KEY_REFUSED)
        fields[name] = value
    if holder is None:
        return Outcome(ProtocolAnswer.error(KeyRefusal.MALFORMED.value), Event.KEY_REFUSED)
    return KeyedRequest(holder, fields, over_budget)


def _budget_refusal(budget: KeyBudget, key: str, owner: str) -> Outcome | None:
    admitted = within_budget(budget, key, owner)
    return admitted if isinstance(admitted, Outcome) else None


def within_budget(budget: KeyBudget, key: str, owner: str) -> str | Outcome:
    key_id = digest_of(key).key_id
    try:
        if budget.admits(key_id):
            return owner
    except StoreError:
        return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)
    return Outcome(ProtocolAnswer.error(budget.refusal), Event.OVER_BUDGET, key_id=key_id)


def provider_code_of(error: ProviderError) -> str:
    return error.code if PROVIDER_CODE.fullmatch(error.code) else BAD_PARAMETERS
