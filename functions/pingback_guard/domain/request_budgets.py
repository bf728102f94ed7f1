"""What a key's request budget is, and what the provider last said about the account's balance."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestLimits:
    """The most requests one key may make to one endpoint in a second and in a minute."""

    per_second: int
    per_minute: int


@dataclass(frozen=True)
class BalanceReading:
    """What the provider answered to getbalance at ``read_at``: a balance or an account error."""

    read_at: float
    balance: float | None = None
    error_code: str = ""
