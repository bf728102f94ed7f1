"""A compat endpoint's request budget per worker key (in.php and res.php)."""

from __future__ import annotations

from dataclasses import dataclass

from pingback_guard.domain.request_budgets import RequestLimits
from pingback_guard.settings.env import Env


@dataclass(frozen=True)
class KeyBudgetSettings:
    """One endpoint's request budget per worker key, counted in its own table."""

    table_name: str
    limits: RequestLimits

    @classmethod
    def from_env(cls, env: Env, endpoint: str) -> KeyBudgetSettings:
        """``endpoint``: IN_PHP or RES_PHP, the prefix of its two variables."""
        return cls(
            table_name=env.text("REQUEST_BUDGETS_TABLE_NAME"),
            limits=RequestLimits(
                per_second=env.integer(f"{endpoint}_BUDGET_PER_SECOND", 1, 10000),
                per_minute=env.integer(f"{endpoint}_BUDGET_PER_MINUTE", 1, 10000),
            ),
        )
