"""The rules of in.php and res.php, independent of HTTP."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from infra.simulator import codes
from infra.simulator.answers import (
    IMAGE_METHODS,
    SOLVE_TIME_FACTOR,
    SUPPORTED_METHODS,
    TOKEN_METHODS,
    image_bytes,
    make_answer,
)
from infra.simulator.config import API_KEY_PATTERN, SimulatorConfig
from infra.simulator.faults import FaultControl
from infra.simulator.randomness import SharedRandom
from infra.simulator.stats import Counters
from infra.simulator.tasks import Task, TaskRegistry, TaskState

logger = logging.getLogger(__name__)

REPORT_ACTIONS: Final = frozenset({"reportbad", "reportgood"})
RES_ACTIONS: Final = frozenset({"get", "getbalance"}) | REPORT_ACTIONS
MAX_BATCH_IDS: Final = 100
MAX_ID_GAP: Final = 97
INJECTED_5XX_STATUSES: Final = (500, 502, 503)
PROXY_TYPES: Final = frozenset({"HTTP", "HTTPS", "SOCKS4", "SOCKS5"})
PROXY_PATTERN: Final = re.compile(r"(?:[^:@\s]+:[^@\s]+@)?[^:@\s]+:\d{1,5}")
TASK_ID_PATTERN: Final = re.compile(r"[0-9]+")
# in.php's image bounds: ERROR_ZERO_CAPTCHA_FILESIZE under 100 bytes, ERROR_TOO_BIG over 100 kB.
MIN_IMAGE_BYTES: Final = 100
MAX_IMAGE_BYTES: Final = 100 * 1024


@dataclass(frozen=True)
class Answer:
    """One in.php/res.php answer; `plain` is the text sent when the client did not ask for JSON."""

    status: int
    request: str | int
    plain: str

    @classmethod
    def error(cls, code: str) -> Answer:
        return cls(0, code, code)

    @classmethod
    def success(cls, request: str | int, plain: str) -> Answer:
        return cls(1, request, plain)

    def render(self, as_json: bool) -> str:
        if as_json:
            return json.dumps(
                {"status": self.status, "request": self.request}, separators=(",", ":")
            )
        return self.plain


@dataclass(frozen=True)
class ResFault:
    """What res.php does wrong for one request: answer late, and/or answer with a 5xx status."""

    delay_seconds: float
    http_status: int | None


class Provider:
    """The simulated CaptchaAI account: accepts tasks and answers polls and reports."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        seed: int,
        api_key: str,
        random: SharedRandom,
        faults: FaultControl,
        registry: TaskRegistry,
        counters: Counters,
        on_task_created: Callable[[Task], None],
    ) -> None:
        self._config = config
        self._seed = seed
        self._api_key = api_key.lower()
        self._random = random
        self._faults = faults
        self._registry = registry
        self._counters = counters
        self._on_task_created = on_task_created

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
        key_error = self._key_error(params.get("key", ""))
        if key_error is not None:
            return Answer.error(key_error)
        if not action:
            return Answer.error(codes.ERROR_EMPTY_ACTION)
        if action == "get":
            return self._get(params)
        if action == "getbalance":
            return self._balance()
        if action in REPORT_ACTIONS:
            return self._report(params.get("id", ""), action)
        return Answer.error(codes.ERROR_BAD_PARAMETERS)

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
        key_error = self._key_error(params.get("key", ""))
        if key_error is not None:
            return Answer.error(key_error)
        if self._faults.current.zero_balance:
            return Answer.error(codes.ERROR_ZERO_BALANCE)
        parameter_error = _task_parameter_error(params)
        if parameter_error is not None:
            return Answer.error(parameter_error)
        if self._random.chance(self._faults.current.in_no_slot_rate):
            return Answer.error(codes.ERROR_NO_SLOT_AVAILABLE)
        task = self._create_task(params)
        request: str | int = int(task.task_id) if self._config.ids_as_numbers else task.task_id
        return Answer.success(request, f"OK|{task.task_id}")

    def _key_error(self, key: str) -> str | None:
        if API_KEY_PATTERN.fullmatch(key) is None:
            return codes.ERROR_WRONG_USER_KEY
        if key.lower() != self._api_key:
            return codes.ERROR_KEY_DOES_NOT_EXIST
        return None

    def _create_task(self, params: Mapping[str, str]) -> Task:
        config = self._config
        now = time.time()
        method = params["method"]
        solve_seconds = self._draw_solve_seconds() * SOLVE_TIME_FACTOR.get(method, 1.0)
        finishes_at = now + config.real_seconds(solve_seconds)
        solved = not self._random.chance(config.unsolvable_rate)
        task_id = self._registry.allocate_id(self._random.integer(1, MAX_ID_GAP))
        task = Task(
            task_id=task_id,
            method=method,
            submitted_at=now,
            finishes_at=finishes_at,
            retained_until=finishes_at + config.real_seconds(config.result_retention_seconds),
            reportable_until=finishes_at + config.real_seconds(config.report_window_seconds),
            solved=solved,
            code=self._solution(task_id, params) if solved else codes.ERROR_CAPTCHA_UNSOLVABLE,
            pingback_url=params.get("pingback") or None,
            pingback_method=self._draw_pingback_method(),
        )
        self._registry.add(task)
        logger.info(
            "task %s accepted (%s), finishes in %.3f s", task_id, task.method, finishes_at - now
        )
        self._on_task_created(task)
        return task

    def _draw_solve_seconds(self) -> float:
        return self._config.solve_time.draw(self._random)

    def _draw_pingback_method(self) -> str:
        if self._config.pingback_method == "mixed":
            return self._random.choice(("get", "post"))
        return self._config.pingback_method

    def _solution(self, task_id: str, params: Mapping[str, str]) -> str:
        config = self._config
        return make_answer(
            self._seed, task_id, params, config.token_min_length, config.token_max_length
        )

    def _get(self, params: Mapping[str, str]) -> Answer:
        if "ids" in params:
            return self._get_many(params["ids"])
        found = self._find(params.get("id", ""))
        if isinstance(found, str):
            return Answer.error(found)
        state = found.state(time.time())
        if state is TaskState.SOLVED:
            return Answer.success(found.code, f"OK|{found.code}")
        return Answer.error(_describe(found, state))

    def _get_many(self, raw_ids: str) -> Answer:
        task_ids = raw_ids.split(",")
        if not self._config.support_ids or not raw_ids or len(task_ids) > MAX_BATCH_IDS:
            return Answer.error(codes.ERROR_BAD_PARAMETERS)
        self._counters.add("res", "batch_requests")
        self._counters.add("res", "batch_ids", len(task_ids))
        now = time.time()
        joined = "|".join(self._describe_id(task_id.strip(), now) for task_id in task_ids)
        return Answer.success(joined, joined)

    def _describe_id(self, raw_id: str, now: float) -> str:
        found = self._find(raw_id)
        if isinstance(found, str):
            return found
        return _describe(found, found.state(now))

    def _balance(self) -> Answer:
        balance = 0.0 if self._faults.current.zero_balance else self._config.balance
        return Answer.success(str(balance), str(balance))

    def _report(self, raw_id: str, action: str) -> Answer:
        found = self._find(raw_id)
        if isinstance(found, str):
            return Answer.error(found)
        if not self._registry.record_report(found.task_id, action, time.time()):
            return Answer.error(codes.ERROR_WRONG_CAPTCHA_ID)
        logger.info("task %s: %s recorded", found.task_id, action)
        return Answer.success(codes.OK_REPORT_RECORDED, codes.OK_REPORT_RECORDED)

    def _find(self, raw_id: str) -> Task | str:
        """The task, or the error code that res.php answers for this id."""
        if TASK_ID_PATTERN.fullmatch(raw_id) is None:
            return codes.ERROR_WRONG_ID_FORMAT
        return self._registry.get(raw_id) or codes.ERROR_WRONG_CAPTCHA_ID


def _describe(task: Task, state: TaskState) -> str:
    """The token, or the status word, that res.php shows for a task in `state`."""
    if state is TaskState.SOLVING:
        return codes.CAPTCHA_NOT_READY
    if state is TaskState.FORGOTTEN:
        return codes.ERROR_WRONG_CAPTCHA_ID
    return task.code


def _task_parameter_error(params: Mapping[str, str]) -> str | None:
    if params.get("method") not in SUPPORTED_METHODS:
        return codes.ERROR_BAD_PARAMETERS
    kind_error = _kind_parameter_error(params["method"], params)
    if kind_error is not None:
        return kind_error
    if "proxy" in params and not _is_valid_proxy(params["proxy"], params.get("proxytype", "HTTP")):
        return codes.ERROR_BAD_PROXY
    return None


def _kind_parameter_error(method: str, params: Mapping[str, str]) -> str | None:
    if method in IMAGE_METHODS:
        image = image_bytes(params)
        if image is None or len(image) < MIN_IMAGE_BYTES:
            return codes.ERROR_ZERO_CAPTCHA_FILESIZE
        return codes.ERROR_TOO_BIG_CAPTCHA_FILESIZE if len(image) > MAX_IMAGE_BYTES else None
    if method == "bls":
        return None if params.get("instructions") else codes.ERROR_BAD_PARAMETERS
    if method in TOKEN_METHODS and not (params.get("googlekey") or params.get("sitekey")):
        return codes.ERROR_GOOGLEKEY
    if method == "geetest" and not (params.get("gt") or params.get("captcha_id")):
        return codes.ERROR_BAD_PARAMETERS
    return None if params.get("pageurl") else codes.ERROR_PAGEURL


def _is_valid_proxy(proxy: str, proxy_type: str) -> bool:
    return proxy_type.upper() in PROXY_TYPES and PROXY_PATTERN.fullmatch(proxy) is not None
