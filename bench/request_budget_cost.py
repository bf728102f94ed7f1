"""`python -m bench.request_budget_cost`: what one in.php/res.php request costs in
RequestBudgetsTable, measured on the real store (moto) at the item's largest.

A key's minute item gets a count in each of its 60 seconds (every second at the per-second
budget, up to the per-minute budget), the item is read back and sized by the rules AWS bills
(bench/item_size.py); the printed write units are what each request's one conditional UpdateItem
costs, admitted or refused (a refused conditional write still consumes write capacity).
"""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws

from bench.cost import MILLION, PRICES
from bench.item_size import item_size, strong_read_units, write_units
from infra.project_template import create_declared_table
from pingback_guard.data.request_budgets import (
    BALANCE_ID,
    BUDGET_PREFIX,
    DynamoDbRequestBudgets,
    minute_of,
)
from pingback_guard.domain.request_budgets import BalanceReading, RequestLimits

TABLE = "request-budgets-bench"
MINUTE_START = 1_767_225_600.0
# The template's largest budgets: every second counter at its highest, four-digit, value.
LIMITS = RequestLimits(per_second=10000, per_minute=10000)
KEY_ID = "0123456789abcdef"  # a key id is 16 hex characters (domain/worker_keys.py)


def _largest_budget_item(client: Any, store: DynamoDbRequestBudgets) -> dict[str, Any]:
    for second in range(60):
        for _ in range(LIMITS.per_minute // 60):
            store.spend(f"res.php#{KEY_ID}", MINUTE_START + second, LIMITS)
    key = f"{BUDGET_PREFIX}res.php#{KEY_ID}#{minute_of(MINUTE_START)}"
    item: dict[str, Any] = client.get_item(TableName=TABLE, Key={"id": {"S": key}})["Item"]
    return item


def main() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_declared_table(client, "RequestBudgetsTable", TABLE)
        store = DynamoDbRequestBudgets(client, TABLE)
        budget_item = _largest_budget_item(client, store)
        store.record_balance(BalanceReading(read_at=MINUTE_START, balance=1234.56789))
        store.claim_balance_refresh(MINUTE_START, 60)
        balance_item = client.get_item(TableName=TABLE, Key={"id": {"S": BALANCE_ID}})["Item"]
    budget_bytes, balance_bytes = item_size(budget_item), item_size(balance_item)
    units = write_units(budget_bytes)
    per_million = units * PRICES.dynamodb_write_units_per_million
    print(f"budget item at its largest: {budget_bytes} bytes -> {units} write unit per request")
    print(f"  admitted or refused: ${per_million:.3f} per million in.php/res.php requests")
    read_units = strong_read_units(balance_bytes)
    read_cost = read_units * PRICES.dynamodb_read_units_per_million
    print(f"balance item: {balance_bytes} bytes -> getbalance adds {read_units} read unit")
    print(f"  (${read_cost:.3f} per million); the stack adds one claim and one write per")
    print("  BalanceCacheSeconds, whatever the number of keys")
    writes, reads = PRICES.dynamodb_write_units_per_million, PRICES.dynamodb_read_units_per_million
    print(f"prices: us-east-1 on-demand (bench/cost.py): ${writes} per {MILLION:,} write units,")
    print(f"  ${reads} per {MILLION:,} read units")


if __name__ == "__main__":
    main()
