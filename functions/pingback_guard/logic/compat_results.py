"""res.php spoken by the stack itself: get (id or ids, from the table with the read-through),
reportgood/reportbad and getbalance, for the key's owner (the protocol both endpoints share:
logic/compat.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from pingback_guard.domain.errors import (
    PingbackGuardError,
    ProviderAccountError,
    ProviderRejectedError,
    StoreError,
)
from pingback_guard.domain.task import (
    TASK_ID_PATTERN,
    ReportClaim,
    ReportVerdict,
    normalise_task_id,
)
from pingback_guard.domain.worker_keys import digest_of
from pingback_guard.logic.compat import (
    BAD_PARAMETERS,
    EMPTY_ACTION,
    UNAVAILABLE,
    WRONG_CAPTCHA_ID,
    WRONG_ID_FORMAT,
    Event,
    Outcome,
    ProtocolAnswer,
    admitted_fields,
    provider_code_of,
)
from pingback_guard.logic.forwarding import protocol_word
from pingback_guard.logic.get_task import Lookup, TaskQuery
from pingback_guard.logic.report import ReportService
from pingback_guard.logic.request_budgets import BalanceSource, KeyBudget
from pingback_guard.logic.worker_keys import WorkerKeys

REPORT_RECORDED = "OK_REPORT_RECORDED"
MAX_IDS = 100
REPORT_ANSWERS = {
    ReportClaim.UNKNOWN_TASK: WRONG_CAPTCHA_ID,
    ReportClaim.NOT_SOLVED: WRONG_CAPTCHA_ID,
    ReportClaim.ALREADY_REPORTED: "ERROR_DUPLICATE_REPORT",
    ReportClaim.WINDOW_CLOSED: "ERROR_REPORT_NOT_RECORDED",
}


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

    def answer(self, fields: Mapping[str, str] | Iterable[tuple[str, str]]) -> Outcome:
        """``fields`` may be read lazily (pairs, the handler's parser): the key is checked and
        charged as soon as it is read, before the rest of the request is."""
        pairs = fields.items() if isinstance(fields, Mapping) else fields
        admitted = admitted_fields(self._keys, self._budget, pairs)
        if isinstance(admitted, Outcome):
            return admitted
        owner, fields = admitted
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
            return self._get_ids(fields["ids"], fields["key"], owner)
        lookups: list[tuple[str, Lookup]] = []
        solved, text = self._describe(fields.get("id", ""), owner, lookups)
        answer = ProtocolAnswer.ok(text, f"OK|{text}") if solved else ProtocolAnswer.error(text)
        return Outcome(answer, Event.ANSWERED, lookups=lookups)

    def _get_ids(self, ids: str, key: str, owner: str) -> Outcome:
        """One part per id asked, in order; each distinct id is read once and counted in the
        key's budget as a read (the request itself paid for the first)."""
        raw_ids = [raw.strip() for raw in ids.split(",", MAX_IDS)]
        if not ids or len(raw_ids) > MAX_IDS:
            return Outcome(ProtocolAnswer.error(BAD_PARAMETERS), Event.ANSWERED)
        distinct = list(dict.fromkeys(raw_ids))
        readable = sum(1 for raw in distinct if TASK_ID_PATTERN.fullmatch(raw))
        key_id = digest_of(key).key_id
        if not self._budget.admits_reads(key_id, readable - 1):
            refusal = ProtocolAnswer.error(self._budget.refusal)
            return Outcome(refusal, Event.OVER_BUDGET, key_id=key_id)
        lookups: list[tuple[str, Lookup]] = []
        described = {raw: self._describe(raw, owner, lookups)[1] for raw in distinct}
        joined = "|".join(described[raw] for raw in raw_ids)
        return Outcome(ProtocolAnswer.ok(joined), Event.ANSWERED, lookups=lookups)

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
            # Final: the report reached the provider, and is never sent again (logic/report.py).
            return Outcome(ProtocolAnswer.error(provider_code_of(error)), Event.ANSWERED, task_id)
        except ProviderAccountError as error:
            code = ProtocolAnswer.error(provider_code_of(error))
            return Outcome(code, Event.ACCOUNT_ERROR, task_id)
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
            return Outcome(ProtocolAnswer.error(provider_code_of(error)), Event.ACCOUNT_ERROR)
        except PingbackGuardError:
            return Outcome(UNAVAILABLE, Event.PROVIDER_UNAVAILABLE)
        return Outcome(ProtocolAnswer.ok(str(balance)), Event.ANSWERED)
