"""The rules of in.php and res.php, independent of HTTP; the dialect decides what differs."""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from infra.simulator import codes
from infra.simulator.answers import REQUEST_FIELD, SOLVE_TIME_FACTOR, Solution, TokenLengths
from infra.simulator.config import API_KEY_PATTERN, SimulatorConfig
from infra.simulator.dialects import Dialect
from infra.simulator.faults import FaultControl
from infra.simulator.plan import BUSY_NO_SLOT, BUSY_QUEUE, BUSY_ZERO_BALANCE, Slot, ThreadPlan
from infra.simulator.randomness import SharedRandom
from infra.simulator.stats import Counters
from infra.simulator.tasks import Task, TaskRegistry, TaskState

logger = logging.getLogger(__name__)

REPORT_ACTIONS: Final = frozenset({"reportbad", "reportgood"})
THREADSINFO: Final = "threadsinfo"
RES_ACTIONS: Final = frozenset({"get", "getbalance", THREADSINFO}) | REPORT_ACTIONS
MAX_BATCH_IDS: Final = 100
MAX_ID_GAP: Final = 97
INJECTED_5XX_STATUSES: Final = (500, 502, 503)
TASK_ID_PATTERN: Final = re.compile(r"[0-9]+")
BUSY_CODES: Final = {
    BUSY_ZERO_BALANCE: codes.ERROR_ZERO_BALANCE,
    BUSY_NO_SLOT: codes.ERROR_NO_SLOT_AVAILABLE,
}


@dataclass(frozen=True)
class Answer:
    """One in.php/res.php answer: `body` is sent when the client asked for JSON, `plain`
    otherwise; `status` is the provider's success flag (1) or failure (0)."""

    status: int
    body: Mapping[str, object]
    plain: str

    @classmethod
    def error(cls, code: str) -> Answer:
        return cls(0, {"status": 0, "request": code}, code)

    @classmethod
    def success(cls, request: str | int, plain: str) -> Answer:
        return cls(1, {"status": 1, "request": request}, plain)

    @classmethod
    def solved(cls, solution: Solution) -> Answer:
        """The answer in its field (``request``, or CaptchaAI's ``result``), with the solver's
        ``user_agent`` beside it where the token is bound to it."""
        body: dict[str, object] = {"status": 1, solution.field: solution.text}
        if solution.user_agent is not None:
            body["user_agent"] = solution.user_agent
        return cls(1, body, f"OK|{solution.text}")

    @classmethod
    def thread_counts(cls, threads: int, working: int) -> Answer:
        """CaptchaAI's threadsinfo: ``{"threads": N, "working_threads": M}`` (captchaai 1.0.1,
        core/orchestrator.py ``read_thread_counts``), the same body with or without json=1."""
        body = {"threads": threads, "working_threads": working}
        return cls(1, body, json.dumps(body, separators=(",", ":")))

    def render(self, as_json: bool) -> str:
        return json.dumps(self.body, separators=(",", ":")) if as_json else self.plain


@dataclass(frozen=True)
class Account:
    """One provider account (numbered in the config's order) with its thread plan; its tasks
    are read through its key only."""

    number: int
    plan: ThreadPlan


@dataclass(frozen=True)
class ResFault:
    """What res.php does wrong for one request: answer late, and/or answer with a 5xx status."""

    delay_seconds: float
    http_status: int | None


class Provider:
    """The simulated provider and its accounts: accepts each account's tasks within its thread
    plan and answers polls, reports and (in CaptchaAI's dialect) threadsinfo."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        dialect: Dialect,
        seed: int,
        api_keys: Sequence[str],
        random: SharedRandom,
        faults: FaultControl,
        registry: TaskRegistry,
        counters: Counters,
        on_task_created: Callable[[Task], None],
    ) -> None:
        self._config = config
        self._dialect = dialect
        self._seed = seed
        plans = [config.threads, *(account.threads for account in config.extra_accounts)]
        self._accounts = [
            Account(number, ThreadPlan(threads)) for number, threads in enumerate(plans)
        ]
        self._accounts_by_key = {
            key.lower(): account for key, account in zip(api_keys, self._accounts, strict=True)
        }
        self._random = random
        self._faults = faults
        self._registry = registry
        self._counters = counters
        self._on_task_created = on_task_created
        self._busy_answer = config.busy_answer or dialect.default_busy_answer
        self._token_lengths = TokenLengths(config.token_min_length, config.token_max_length)
        self._actions: dict[str, Callable[[Mapping[str, str], Account], Answer]] = {
            "get": self._get,
            "getbalance": lambda _, account: self._balance(account),
            **{action: functools.partial(self._report, action=action) for action in REPORT_ACTIONS},
        }
        if dialect.answers_threadsinfo:
            self._actions[THREADSINFO] = lambda _, account: self.thread_counts(account.number)

    def submit(self, params: Mapping[str, str]) -> Answer:
        """in.php"""
        self._counters.add("in", "requests")
        answer = self._accept(params)
        if answer.status == 1:
            self._counters.add("in", "accepted")
        else:
            self._counters.add("in", "rejected")
            self._counters.add("in_errors", answer.plain)
        return answer

    def result(self, params: Mapping[str, str]) -> Answer:
        """res.php, once any injected fault has been applied."""
        action = params.get("action", "")
        self._counters.add("res_actions", action if action in RES_ACTIONS else "other")
        account = self._account(params.get("key", ""))
        if isinstance(account, str):
            return Answer.error(account)
        if not action:
            return Answer.error(codes.ERROR_EMPTY_ACTION)
        answer_action = self._actions.get(action)
        if answer_action is None:
            return Answer.error(codes.ERROR_BAD_PARAMETERS)
        return answer_action(params, account)

    def thread_counts(self, account_number: int) -> Answer:
        plan = self._accounts[account_number].plan
        return Answer.thread_counts(plan.threads, plan.working(time.time()))

    def draw_res_fault(self) -> ResFault:
        """Called once for every res.php request, before `result` (which a 5xx fault skips)."""
        self._counters.add("res", "requests")
        faults = self._faults.current
        slow = self._random.chance(faults.res_slow_rate)
        failing = self._random.chance(faults.res_5xx_rate)
        if slow:
            self._counters.add("res", "injected_slow")
        if failing:
            self._counters.add("res", "injected_5xx")
        return ResFault(
            delay_seconds=faults.res_slow_seconds if slow else 0.0,
            http_status=self._random.choice(INJECTED_5XX_STATUSES) if failing else None,
        )

    def _accept(self, params: Mapping[str, str]) -> Answer:
        account = self._account(params.get("key", ""))
        if isinstance(account, str):
            return Answer.error(account)
        if self._faults.current.account_has_no_balance(account.number):
            return Answer.error(codes.ERROR_ZERO_BALANCE)
        parameter_error = self._dialect.submit_error(params)
        if parameter_error is not None:
            return Answer.error(parameter_error)
        if self._random.chance(self._faults.current.in_no_slot_rate):
            return Answer.error(codes.ERROR_NO_SLOT_AVAILABLE)
        task = self._create_task(params, account)
        if task is None:
            return Answer.error(BUSY_CODES[self._busy_answer])
        request: str | int = int(task.task_id) if self._config.ids_as_numbers else task.task_id
        return Answer.success(request, f"OK|{task.task_id}")

    def _account(self, key: str) -> Account | str:
        """The key's account, or the error code in.php and res.php answer for the key."""
        if API_KEY_PATTERN.fullmatch(key) is None:
            return codes.ERROR_WRONG_USER_KEY
        return self._accounts_by_key.get(key.lower(), codes.ERROR_KEY_DOES_NOT_EXIST)

    def _create_task(self, params: Mapping[str, str], account: Account) -> Task | None:
        """The accepted task, or None when the thread plan has no thread for it."""
        config = self._config
        now = time.time()
        method = params["method"]
        solve_seconds = self._draw_solve_seconds() * SOLVE_TIME_FACTOR.get(method, 1.0)
        slot = self._reserve_thread(account.plan, now, config.real_seconds(solve_seconds))
        if slot is None:
            return None
        solved = not self._random.chance(config.unsolvable_rate)
        task_id = self._registry.allocate_id(self._random.integer(1, MAX_ID_GAP))
        task = Task(
            task_id=task_id,
            account=account.number,
            method=method,
            submitted_at=now,
            started_at=slot.starts_at,
            finishes_at=slot.finishes_at,
            retained_until=slot.finishes_at + config.real_seconds(config.result_retention_seconds),
            reportable_until=slot.finishes_at + config.real_seconds(config.report_window_seconds),
            solved=solved,
            solution=self._solution(task_id, params, solved),
            pingback_url=params.get("pingback") or None,
            pingback_method=self._draw_pingback_method(),
        )
        self._registry.add(task)
        logger.info(
            "task %s accepted (%s), finishes in %.3f s", task_id, method, slot.finishes_at - now
        )
        self._on_task_created(task)
        return task

    def _reserve_thread(self, plan: ThreadPlan, now: float, solve_seconds: float) -> Slot | None:
        slot = plan.reserve(now, solve_seconds, queue=self._busy_answer == BUSY_QUEUE)
        if slot is None:
            self._counters.add("plan", "busy_refused")
        elif slot.starts_at > now:
            self._counters.add("plan", "queued")
        return slot

    def _draw_solve_seconds(self) -> float:
        return self._config.solve_time.draw(self._random)

    def _draw_pingback_method(self) -> str:
        if self._config.pingback_method == "mixed":
            return self._random.choice(("get", "post"))
        return self._config.pingback_method

    def _solution(self, task_id: str, params: Mapping[str, str], solved: bool) -> Solution:
        if not solved:
            return Solution(codes.ERROR_CAPTCHA_UNSOLVABLE, REQUEST_FIELD)
        return self._dialect.solve(self._seed, task_id, params, self._token_lengths)

    def _get(self, params: Mapping[str, str], account: Account) -> Answer:
        if "ids" in params:
            return self._get_many(params["ids"], account)
        found = self._find(params.get("id", ""), account)
        if isinstance(found, str):
            return Answer.error(found)
        state = found.state(time.time())
        if state is TaskState.SOLVED:
            return Answer.solved(found.solution)
        return Answer.error(_describe(found, state))

    def _get_many(self, raw_ids: str, account: Account) -> Answer:
        task_ids = raw_ids.split(",")
        if not self._config.support_ids or not raw_ids or len(task_ids) > MAX_BATCH_IDS:
            return Answer.error(codes.ERROR_BAD_PARAMETERS)
        self._counters.add("res", "batch_requests")
        self._counters.add("res", "batch_ids", len(task_ids))
        now = time.time()
        joined = "|".join(self._describe_id(task_id.strip(), account, now) for task_id in task_ids)
        return Answer.success(joined, joined)

    def _describe_id(self, raw_id: str, account: Account, now: float) -> str:
        found = self._find(raw_id, account)
        if isinstance(found, str):
            return found
        return _describe(found, found.state(now))

    def _balance(self, account: Account) -> Answer:
        no_balance = self._faults.current.account_has_no_balance(account.number)
        balance = 0.0 if no_balance else self._config.balance
        return Answer.success(str(balance), str(balance))

    def _report(self, params: Mapping[str, str], account: Account, action: str) -> Answer:
        found = self._find(params.get("id", ""), account)
        if isinstance(found, str):
            return Answer.error(found)
        if not self._registry.record_report(found.task_id, action, time.time()):
            return Answer.error(codes.ERROR_WRONG_CAPTCHA_ID)
        logger.info("task %s: %s recorded", found.task_id, action)
        return Answer.success(codes.OK_REPORT_RECORDED, codes.OK_REPORT_RECORDED)

    def _find(self, raw_id: str, account: Account) -> Task | str:
        """The account's task, or the error code that res.php answers for this id (another
        account's task is as unknown as one never submitted)."""
        if TASK_ID_PATTERN.fullmatch(raw_id) is None:
            return codes.ERROR_WRONG_ID_FORMAT
        task = self._registry.get(raw_id)
        if task is None or task.account != account.number:
            return codes.ERROR_WRONG_CAPTCHA_ID
        return task


def _describe(task: Task, state: TaskState) -> str:
    """The answer, or the status word, that res.php shows for a task in `state`."""
    if state is TaskState.SOLVING:
        return codes.CAPTCHA_NOT_READY
    if state is TaskState.FORGOTTEN:
        return codes.ERROR_WRONG_CAPTCHA_ID
    return task.code
