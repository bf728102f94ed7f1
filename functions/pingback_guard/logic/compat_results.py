"""res.php spoken by the stack itself: get (id or ids, from the table with the read-through),
reportgood/reportbad and getbalance, for the key's owner (the protocol both endpoints share:
logic/compat.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

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
    TaskStatus,
    normalise_task_id,
)
from pingback_guard.domain.worker_keys import Dialect, digest_of
from pingback_guard.logic.compat import (
    BAD_PARAMETERS,
    EMPTY_ACTION,
    UNAVAILABLE,
    WRONG_CAPTCHA_ID,
    WRONG_ID_FORMAT,
    Event,
    Outcome,
    ProtocolAnswer,
    keyed_fields,
    provider_code_of,
)
from pingback_guard.logic.dialects import ANSWER_IN_RESULT, BUSY_ANSWERS
from pingback_guard.logic.forwarding import protocol_word
from pingback_guard.logic.get_task import Lookup, TaskQuery
from pingback_guard.logic.key_threads import KeyThreads, ThreadsInfo
from pingback_guard.logic.report import ReportService
from pingback_guard.logic.request_budgets import BalanceSource, KeyBudget
from pingback_guard.logic.worker_keys import KeyHolder, WorkerKeys

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
        threads: KeyThreads | None = None,
    ) -> None:
        self._keys = keys
        self._query = query
        self._reports = reports
        self._balance_source = balance
        self._clock = clock
        self._budget = budget
        self._threads = threads

    def answer(self, fields: Mapping[str, str] | Iterable[tuple[str, str]]) -> Outcome:
        """``fields`` may be read lazily (pairs, the handler's parser): the key is checked and
        charged as soon as it is read, before the rest of the request is."""
        pairs = fields.items() if isinstance(fields, Mapping) else fields
        keyed = keyed_fields(self._keys, self._budget, pairs)
        if isinstance(keyed, Outcome):
            return keyed
        holder, fields = keyed.holder, keyed.fields
        action = fields.get("action", "")
        if keyed.over_budget is not None:
            return self._over_budget(holder, action, keyed.over_budget)
        try:
            return self._action(holder, action, fields)
        except StoreError:
            return Outcome(UNAVAILABLE, Event.STORE_UNAVAILABLE)

    def _action(self, holder: KeyHolder, action: str, fields: Mapping[str, str]) -> Outcome:
        owner = holder.owner
        if action == "get":
            return self._finished_read(holder, self._get(fields, holder))
        if action == "threadsinfo" and self._threads is not None:
            return _threads_answer(self._threads.info(holder))
        if action in {"reportgood", "reportbad"}:
            return self._report(fields.get("id", ""), action, owner)
        if action == "getbalance":
            return self._balance()
        return Outcome(
            ProtocolAnswer.error(BAD_PARAMETERS if action else EMPTY_ACTION), Event.ANSWERED
        )

    def _over_budget(self, holder: KeyHolder, action: str, refused: Outcome) -> Outcome:
        """A key over its budget gets the answer its own client reads as "ask again later"."""
        busy = BUSY_ANSWERS[holder.dialect].read_over_budget
        if refused.event is not Event.OVER_BUDGET or busy is None:
            return refused
        if action == "threadsinfo":
            full = ThreadsInfo(holder.threads, holder.threads)
            return Outcome(_threads_answer(full).answer, refused.event, key_id=holder.key_id)
        if action == "get":
            return Outcome(ProtocolAnswer.error(busy), refused.event, key_id=holder.key_id)
        return refused

    def _finished_read(self, holder: KeyHolder, outcome: Outcome) -> Outcome:
        """A task its key reads final no longer holds one of the key's threads."""
        if self._threads is None:
            return outcome
        for task_id, found in outcome.lookups:
            if found.view.get("status") != TaskStatus.PENDING.value:
                try:
                    self._threads.finished(holder, task_id)
                except StoreError:
                    continue
        return outcome

    def _get(self, fields: Mapping[str, str], holder: KeyHolder) -> Outcome:
        owner = holder.owner
        if "ids" in fields:
            return self._get_ids(fields["ids"], fields["key"], owner)
        lookups: list[tuple[str, Lookup]] = []
        solved, text = self._describe(fields.get("id", ""), owner, lookups)
        if not solved:
            return Outcome(ProtocolAnswer.error(text), Event.ANSWERED, lookups=lookups)
        extra = _answer_fields(text, lookups[-1][1], holder.dialect)
        answer = replace(ProtocolAnswer.ok(text, f"OK|{text}"), extra=extra)
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


def _threads_answer(info: ThreadsInfo) -> Outcome:
    """threadsinfo as CaptchaAI's SDK reads it: ``threads`` and ``working_threads`` (JSON; the
    same JSON without json=1: CaptchaAI's docs give no plain-text form)."""
    counts = (("threads", info.threads), ("working_threads", info.working_threads))
    plain = f'{{"threads":{info.threads},"working_threads":{info.working_threads}}}'
    return Outcome(ProtocolAnswer(1, "OK", plain, extra=counts), Event.ANSWERED)


def _answer_fields(answer: str, found: Lookup, dialect: Dialect) -> tuple[tuple[str, object], ...]:
    """A solved task's JSON answer beside ``request``: ``result`` for the clients that read some
    kinds' answers there (ANSWER_IN_RESULT), and the solver's ``user_agent`` when the provider
    sent one."""
    user_agent = found.view.get("user_agent")
    result = (("result", answer),) if ANSWER_IN_RESULT[dialect] else ()
    return result + ((("user_agent", user_agent),) if user_agent else ())
