"""One contract, three stores: DynamoDbRequestBudgets on moto and on DynamoDB Local (AWS's own
engine), and the unit tests' InMemoryRequestBudgets. The table is created as template.yaml
declares it."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from infra.project_template import create_declared_table
from pingback_guard.data.request_budgets import (
    BUDGET_PREFIX,
    DynamoDbRequestBudgets,
    RequestBudgetStore,
    minute_of,
)
from pingback_guard.domain.errors import StoreError
from pingback_guard.domain.request_budgets import BalanceReading, RequestLimits
from tests.fakes import InMemoryRequestBudgets
from tests.waiting import run_at_once

MINUTE = 1_767_225_600.0  # a minute's first second
LIMITS = RequestLimits(per_second=2, per_minute=3)
KEY = "res.php#0123456789abcdef"
OTHER_KEY = "res.php#fedcba9876543210"


def _table(client: Any) -> str:
    name = f"request-budgets-{uuid.uuid4().hex[:12]}"
    create_declared_table(client, "RequestBudgetsTable", name)
    return name


@pytest.fixture
def moto_budgets(aws: None) -> DynamoDbRequestBudgets:
    client = boto3.client("dynamodb", region_name="us-east-1")
    return DynamoDbRequestBudgets(client, _table(client))


@pytest.fixture
def local_budgets(dynamodb_local_client: Any) -> DynamoDbRequestBudgets:
    return DynamoDbRequestBudgets(dynamodb_local_client, _table(dynamodb_local_client))


STORE_FIXTURES = {"dynamodb": "moto_budgets", "dynamodb-local": "local_budgets"}


@pytest.fixture(params=["dynamodb", "dynamodb-local", "memory"])
def store(request: pytest.FixtureRequest) -> RequestBudgetStore:
    if request.param in STORE_FIXTURES:
        result: RequestBudgetStore = request.getfixturevalue(STORE_FIXTURES[request.param])
        return result
    return InMemoryRequestBudgets()


def test_a_second_holds_its_limit_and_the_next_second_admits_again(
    store: RequestBudgetStore,
) -> None:
    assert [store.spend(KEY, MINUTE + 0.1, LIMITS) for _ in range(3)] == [True, True, False]
    assert store.spend(KEY, MINUTE + 1.5, LIMITS)


def test_a_minute_holds_its_limit_and_refusals_count_nothing(store: RequestBudgetStore) -> None:
    assert store.spend(KEY, MINUTE, LIMITS)
    assert [store.spend(KEY, MINUTE + 1, LIMITS) for _ in range(4)] == [True, True, False, False]
    # Two admitted in second 1 and one in second 0: the minute is spent, whatever the second.
    assert not store.spend(KEY, MINUTE + 30, LIMITS)
    assert store.spend(KEY, MINUTE + 60, LIMITS)


def test_reads_count_in_the_minute_only_and_all_or_nothing(store: RequestBudgetStore) -> None:
    # res.php's ids=: a request admitted in its second and minute, then its further reads.
    wide = RequestLimits(per_second=2, per_minute=10)
    assert store.spend(KEY, MINUTE, wide)
    assert store.spend(KEY, MINUTE, wide, units=6, second=False)
    assert not store.spend(KEY, MINUTE + 1, wide, units=4, second=False)  # 7 + 4 > 10
    assert store.spend(KEY, MINUTE + 1, wide, units=3, second=False)
    assert not store.spend(KEY, MINUTE + 2, wide)
    # The second counted the request alone: another key's second is untouched by reads.
    assert not store.spend(OTHER_KEY, MINUTE, wide, units=11, second=False)
    assert [store.spend(OTHER_KEY, MINUTE, wide) for _ in range(3)] == [True, True, False]


def test_keys_are_counted_apart(store: RequestBudgetStore) -> None:
    for second in range(3):
        store.spend(KEY, MINUTE + second, LIMITS)
    assert not store.spend(KEY, MINUTE + 3, LIMITS)
    assert store.spend(OTHER_KEY, MINUTE + 3, LIMITS)


def test_concurrent_requests_of_one_key_never_exceed_its_budget(
    store: RequestBudgetStore,
) -> None:
    limits = RequestLimits(per_second=5, per_minute=5)
    admitted = run_at_once(12, lambda: store.spend(KEY, MINUTE, limits))
    assert sorted(admitted) == [False] * 7 + [True] * 5


def test_the_balance_refresh_is_claimed_once_per_interval(store: RequestBudgetStore) -> None:
    assert store.balance() is None
    claims = run_at_once(8, lambda: store.claim_balance_refresh(MINUTE, 60))
    assert claims.count(True) == 1
    assert not store.claim_balance_refresh(MINUTE + 59, 60)
    assert store.claim_balance_refresh(MINUTE + 60, 60)


def test_the_balance_or_the_account_error_is_kept(store: RequestBudgetStore) -> None:
    store.record_balance(BalanceReading(read_at=MINUTE, balance=12.345))
    assert store.balance() == BalanceReading(read_at=MINUTE, balance=12.345)
    failed = BalanceReading(read_at=MINUTE + 60, error_code="ERROR_ZERO_BALANCE")
    store.record_balance(failed)
    assert store.balance() == failed
    store.record_balance(BalanceReading(read_at=MINUTE + 120, balance=0.5))
    assert store.balance() == BalanceReading(read_at=MINUTE + 120, balance=0.5)


def test_a_budget_item_is_one_minute_s_and_expires_after_it(
    moto_budgets: DynamoDbRequestBudgets,
) -> None:
    moto_budgets.spend(KEY, MINUTE + 7, LIMITS)
    client = boto3.client("dynamodb", region_name="us-east-1")
    (table,) = client.list_tables()["TableNames"]
    item = client.get_item(
        TableName=table, Key={"id": {"S": f"{BUDGET_PREFIX}{KEY}#{minute_of(MINUTE)}"}}
    )["Item"]
    assert item["requests"] == {"N": "1"} and item["s7"] == {"N": "1"}
    assert float(item["expires_at"]["N"]) == MINUTE + 120


def test_a_missing_table_is_a_store_error_never_a_refusal(aws: None) -> None:
    budgets = DynamoDbRequestBudgets(boto3.client("dynamodb", region_name="us-east-1"), "gone")
    with pytest.raises(StoreError):
        budgets.spend(KEY, MINUTE, LIMITS)
