"""Configuration of the simulator: provider behaviour and the faults it injects.

Durations are nominal provider seconds; the simulator divides the ones that describe provider
behaviour (solve times, retention, report window, pingback delay and reorder window) by
`time_scale`. Network timings (`pingback_timeout_seconds`, `res_slow_seconds`) stay real seconds
because they are measured against real HTTP clients' timeouts.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from infra.simulator.dialects import CAPTCHAAI, DIALECT_NAMES
from infra.simulator.plan import BUSY_ANSWERS
from infra.simulator.randomness import SharedRandom

PINGBACK_METHODS: Final = ("get", "post", "mixed")
SOLVE_TIME_KINDS: Final = ("lognormal", "uniform")
API_KEY_PATTERN: Final = re.compile(r"[0-9a-fA-F]{32}")
MIN_TOKEN_LENGTH: Final = 10
FAULT_RATES: Final = (
    "pingback_drop_rate",
    "pingback_duplicate_rate",
    "res_5xx_rate",
    "res_slow_rate",
    "in_no_slot_rate",
)

FieldParser = Callable[[str, object], object]


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


@dataclass(frozen=True)
class SolveTimeDistribution:
    """How long the provider takes to finish a task, in nominal seconds.

    `lognormal`: median `median_seconds`, shape `sigma`, clamped to [min_seconds, max_seconds].
    `uniform`: anywhere in [min_seconds, max_seconds]; equal bounds give a fixed solve time.
    """

    kind: str = "lognormal"
    median_seconds: float = 25.0
    sigma: float = 0.45
    min_seconds: float = 5.0
    max_seconds: float = 180.0

    def __post_init__(self) -> None:
        _check(self.kind in SOLVE_TIME_KINDS, f"solve_time.kind must be one of {SOLVE_TIME_KINDS}")
        _check(self.median_seconds > 0, "solve_time.median_seconds must be > 0")
        _check(self.sigma >= 0, "solve_time.sigma must be >= 0")
        _check(
            0 <= self.min_seconds <= self.max_seconds,
            "solve_time needs 0 <= min_seconds <= max_seconds",
        )

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> SolveTimeDistribution:
        return dataclasses.replace(cls(), **_parse_fields(values, _SOLVE_TIME_FIELDS, "solve_time"))

    def draw(self, randomness: SharedRandom) -> float:
        """One task's solve time, in nominal seconds."""
        if self.kind == "uniform":
            return randomness.uniform(self.min_seconds, self.max_seconds)
        drawn = randomness.lognormal(math.log(self.median_seconds), self.sigma)
        return min(max(drawn, self.min_seconds), self.max_seconds)


@dataclass(frozen=True)
class Faults:
    """Faults the simulator injects; all rates are probabilities per task or per request."""

    pingback_drop_rate: float = 0.0
    pingback_delay: tuple[float, float] = (0.0, 0.0)
    pingback_duplicate_rate: float = 0.0
    pingback_reorder_window: float = 0.0
    res_5xx_rate: float = 0.0
    res_slow_rate: float = 0.0
    res_slow_seconds: float = 10.0
    in_no_slot_rate: float = 0.0
    zero_balance: bool = False
    # Accounts (0: the first, 1..: `extra_accounts`) whose submits answer ERROR_ZERO_BALANCE.
    zero_balance_accounts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check(
            all(account >= 0 for account in self.zero_balance_accounts),
            "zero_balance_accounts are account numbers >= 0",
        )
        for name in FAULT_RATES:
            _check(0.0 <= getattr(self, name) <= 1.0, f"{name} must be between 0 and 1")
        low, high = self.pingback_delay
        _check(0 <= low <= high, "pingback_delay needs 0 <= low <= high")
        _check(self.pingback_reorder_window >= 0, "pingback_reorder_window must be >= 0")
        _check(self.res_slow_seconds >= 0, "res_slow_seconds must be >= 0")

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> Faults:
        return cls().updated(values)

    def updated(self, changes: Mapping[str, object]) -> Faults:
        """A copy with `changes` (fault name -> JSON value) applied."""
        return dataclasses.replace(self, **_parse_fields(changes, _FAULT_FIELDS, "faults"))

    def to_json(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "pingback_delay": list(self.pingback_delay),
            "zero_balance_accounts": list(self.zero_balance_accounts),
        }

    def account_has_no_balance(self, account: int) -> bool:
        return self.zero_balance or account in self.zero_balance_accounts


@dataclass(frozen=True)
class AccountConfig:
    """One more provider account on the same simulator (and URL), with its own key (random when
    None) and thread plan; its tasks are its own, as another CaptchaAI account's are."""

    api_key: str | None = None
    threads: int = 1000

    def __post_init__(self) -> None:
        _check_account(self.api_key, self.threads)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> AccountConfig:
        return dataclasses.replace(cls(), **_parse_fields(values, _ACCOUNT_FIELDS, "account"))


@dataclass(frozen=True)
class SimulatorConfig:
    """Everything that shapes one simulator run. `seed=None` picks a random seed."""

    host: str = "127.0.0.1"
    port: int = 0
    dialect: str = CAPTCHAAI
    api_key: str | None = None
    # The account's thread plan (tasks solving at once) and what a submit gets when every
    # thread is busy (None: the dialect's documented answer; see plan.py).
    threads: int = 1000
    busy_answer: str | None = None
    extra_accounts: tuple[AccountConfig, ...] = ()
    # in.php + res.php requests per nominal second before HTTP 429; None: no limit.
    requests_per_second: float | None = None
    seed: int | None = None
    time_scale: float = 1.0
    solve_time: SolveTimeDistribution = field(default_factory=SolveTimeDistribution)
    unsolvable_rate: float = 0.02
    result_retention_seconds: float = 300.0
    report_window_seconds: float = 900.0
    token_min_length: int = 500
    token_max_length: int = 4000
    ids_as_numbers: bool = True
    support_ids: bool = True
    balance: float = 10.0
    pingback_method: str = "get"
    pingback_timeout_seconds: float = 5.0
    pingback_workers: int = 8
    faults: Faults = field(default_factory=Faults)

    def __post_init__(self) -> None:
        _check(_is_ipv4_loopback(self.host), "host must be an IPv4 loopback address (127.0.0.0/8)")
        _check(0 <= self.port <= 65535, "port must be between 0 and 65535")
        _check(self.dialect in DIALECT_NAMES, f"dialect must be one of {DIALECT_NAMES}")
        _check_account(self.api_key, self.threads)
        keys = [self.api_key, *(account.api_key for account in self.extra_accounts)]
        given = [key.lower() for key in keys if key is not None]
        _check(len(given) == len(set(given)), "accounts need different api_keys")
        _check(
            self.busy_answer is None or self.busy_answer in BUSY_ANSWERS,
            f"busy_answer must be one of {BUSY_ANSWERS}",
        )
        _check(
            self.requests_per_second is None or self.requests_per_second >= 1,
            "requests_per_second must be >= 1",
        )
        _check(self.time_scale > 0, "time_scale must be > 0")
        _check(0.0 <= self.unsolvable_rate <= 1.0, "unsolvable_rate must be between 0 and 1")
        _check(self.result_retention_seconds >= 0, "result_retention_seconds must be >= 0")
        _check(self.report_window_seconds >= 0, "report_window_seconds must be >= 0")
        _check(
            MIN_TOKEN_LENGTH <= self.token_min_length <= self.token_max_length,
            f"token lengths need {MIN_TOKEN_LENGTH} <= token_min_length <= token_max_length",
        )
        _check(self.balance >= 0, "balance must be >= 0")
        _check(
            self.pingback_method in PINGBACK_METHODS,
            f"pingback_method must be one of {PINGBACK_METHODS}",
        )
        _check(self.pingback_timeout_seconds > 0, "pingback_timeout_seconds must be > 0")
        _check(self.pingback_workers >= 1, "pingback_workers must be >= 1")

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> SimulatorConfig:
        return dataclasses.replace(cls(), **_parse_fields(values, _CONFIG_FIELDS, "config"))

    def real_seconds(self, nominal_seconds: float) -> float:
        """Wall-clock seconds for a nominal provider duration."""
        return nominal_seconds / self.time_scale


def load_config_mapping(json_or_path: str) -> dict[str, object]:
    """Reads a config given as inline JSON (starting with `{`) or as the path of a JSON file."""
    text = json_or_path if json_or_path.lstrip().startswith("{") else _read(json_or_path)
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"config is not valid JSON: {error}") from error
    return dict(_as_mapping("config", loaded))


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}") from error


def _check_account(api_key: str | None, threads: int) -> None:
    _check(
        api_key is None or API_KEY_PATTERN.fullmatch(api_key) is not None,
        "api_key must be 32 hexadecimal characters",
    )
    _check(threads >= 1, "threads must be >= 1")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _is_ipv4_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.version == 4 and address.is_loopback


def _parse_fields(
    values: Mapping[str, object], parsers: Mapping[str, FieldParser], section: str
) -> dict[str, Any]:
    unknown = sorted(set(values) - set(parsers))
    if unknown:
        raise ConfigError(f"unknown {section} keys: {', '.join(unknown)}")
    return {name: parsers[name](name, value) for name, value in values.items()}


def _as_mapping(name: str, value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ConfigError(f"{name} must be a JSON object")
    return value


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number")
    return float(value)


def _as_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer")
    return value


def _as_optional_int(name: str, value: object) -> int | None:
    return None if value is None else _as_int(name, value)


def _as_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false")
    return value


def _as_str(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string")
    return value


def _as_optional_str(name: str, value: object) -> str | None:
    return None if value is None else _as_str(name, value)


def _as_optional_float(name: str, value: object) -> float | None:
    return None if value is None else _as_float(name, value)


def _as_seconds_range(name: str, value: object) -> tuple[float, float]:
    """A [low, high] pair, or one number for a fixed value."""
    if isinstance(value, list | tuple) and len(value) == 2:
        return _as_float(name, value[0]), _as_float(name, value[1])
    seconds = _as_float(name, value)
    return seconds, seconds


def _as_account_numbers(name: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{name} must be a list of account numbers")
    return tuple(_as_int(name, item) for item in value)


def _as_accounts(name: str, value: object) -> tuple[AccountConfig, ...]:
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{name} must be a list of accounts")
    return tuple(AccountConfig.from_mapping(_as_mapping(name, item)) for item in value)


def _as_solve_time(name: str, value: object) -> SolveTimeDistribution:
    return SolveTimeDistribution.from_mapping(_as_mapping(name, value))


def _as_faults(name: str, value: object) -> Faults:
    return Faults.from_mapping(_as_mapping(name, value))


_SOLVE_TIME_FIELDS: Final[Mapping[str, FieldParser]] = {
    "kind": _as_str,
    "median_seconds": _as_float,
    "sigma": _as_float,
    "min_seconds": _as_float,
    "max_seconds": _as_float,
}

_FAULT_FIELDS: Final[Mapping[str, FieldParser]] = {
    "pingback_drop_rate": _as_float,
    "pingback_delay": _as_seconds_range,
    "pingback_duplicate_rate": _as_float,
    "pingback_reorder_window": _as_float,
    "res_5xx_rate": _as_float,
    "res_slow_rate": _as_float,
    "res_slow_seconds": _as_float,
    "in_no_slot_rate": _as_float,
    "zero_balance": _as_bool,
    "zero_balance_accounts": _as_account_numbers,
}

_ACCOUNT_FIELDS: Final[Mapping[str, FieldParser]] = {
    "api_key": _as_optional_str,
    "threads": _as_int,
}

_CONFIG_FIELDS: Final[Mapping[str, FieldParser]] = {
    "host": _as_str,
    "port": _as_int,
    "dialect": _as_str,
    "api_key": _as_optional_str,
    "threads": _as_int,
    "busy_answer": _as_optional_str,
    "extra_accounts": _as_accounts,
    "requests_per_second": _as_optional_float,
    "seed": _as_optional_int,
    "time_scale": _as_float,
    "solve_time": _as_solve_time,
    "unsolvable_rate": _as_float,
    "result_retention_seconds": _as_float,
    "report_window_seconds": _as_float,
    "token_min_length": _as_int,
    "token_max_length": _as_int,
    "ids_as_numbers": _as_bool,
    "support_ids": _as_bool,
    "balance": _as_float,
    "pingback_method": _as_str,
    "pingback_timeout_seconds": _as_float,
    "pingback_workers": _as_int,
    "faults": _as_faults,
}
