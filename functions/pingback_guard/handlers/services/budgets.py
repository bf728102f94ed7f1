"""in.php's and res.php's request budgets per worker key, and the balance they share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pingback_guard.data.request_budgets import DynamoDbRequestBudgets
from pingback_guard.logic.request_budgets import Endpoint, KeyBudget, SharedBalance
from pingback_guard.provider.configured_client import ProviderOnFirstUse, single_attempt_client
from pingback_guard.settings.key_budget import KeyBudgetSettings
from pingback_guard.settings.provider import ProviderSettings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


def key_budget(
    settings: KeyBudgetSettings, endpoint: Endpoint, dynamodb: DynamoDBClient
) -> KeyBudget:
    store = DynamoDbRequestBudgets(dynamodb, settings.table_name)
    return KeyBudget(store, endpoint, settings.limits)


def shared_balance(
    budgets: KeyBudgetSettings,
    provider: ProviderSettings,
    refresh_seconds: float,
    dynamodb: DynamoDBClient,
) -> SharedBalance:
    return SharedBalance(
        DynamoDbRequestBudgets(dynamodb, budgets.table_name),
        # One attempt: a worker is waiting, and every other request serves the cached answer.
        # Made at the first refresh: most res.php requests are gets.
        ProviderOnFirstUse(lambda: single_attempt_client(provider)),
        refresh_seconds,
    )
