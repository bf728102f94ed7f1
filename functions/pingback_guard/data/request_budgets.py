"""Per-key request budgets and the stack's cached provider balance, in their own DynamoDB table
(the only code that reads or writes it). Two kinds of items, both keyed by ``id``:

- ``budget#<endpoint>#<key id>#<minute>``: one key's requests to one endpoint in one wall-clock
  minute (``requests``) and in each of its seconds (``s0`` .. ``s59``). One conditional
  ``UpdateItem`` counts a request in both windows or refuses it (nothing counted): the counts
  hold across every Lambda container. The item expires by the table's TTL once its minute is over
  (expired items are deleted within a few days and no request reads them again: the next minute
  is another item).
- ``balance``: the provider account's balance as last read (or the account error it answered),
  and when a container last claimed the right to read it again (``claimed_at``).

The largest budget item (60 second counters) is under 1 KB, so each request costs one write unit,
refused or not: a write is billed by the item's size rounded up to the next 1 KB, and a refused
conditional write still consumes write units for the larger of the item's old and new size
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
`python -m bench.request_budget_cost` prints the figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pingback_guard.data.dynamodb_table import ConditionRefused, dynamodb_call
from pingback_guard.domain.request_budgets import BalanceReading, RequestLimits

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

BUDGET_PREFIX = "budget#"
BALANCE_ID = "balance"
SECONDS_PER_MINUTE = 60
# An item outlives its minute by one more, so a clock a little behind still finds it.
EXPIRY_MINUTES = 2
# Room for the units counted: the count so far at most the limit less them.
WITHIN_MINUTE = "(attribute_not_exists(#minute) OR #minute <= :minute_room)"
WITHIN_SECOND = "(attribute_not_exists(#second) OR #second <= :second_room)"
REFRESH_DUE = "attribute_not_exists(claimed_at) OR claimed_at <= :due"


class RequestBudgetStore(Protocol):
    def spend(
        self,
        budget_key: str,
        now: float,
        limits: RequestLimits,
        units: int = 1,
        *,
        second: bool = True,
    ) -> bool:
        """Count ``units`` of ``budget_key`` in its current minute and (``second``) second; False
        (nothing counted) when either window cannot hold them within its limit."""

    def balance(self) -> BalanceReading | None:
        """The balance as last read, None before the first read."""

    def claim_balance_refresh(self, now: float, interval_seconds: float) -> bool:
        """True for at most one caller per ``interval_seconds``, stack-wide: that caller reads
        the provider's balance; every other serves the cached one."""

    def record_balance(self, reading: BalanceReading) -> None:
        """Keep what the provider answered for everyone who asks until the next refresh."""


def minute_of(now: float) -> int:
    return int(now // SECONDS_PER_MINUTE)


def second_counter(now: float) -> str:
    """The attribute counting the requests of ``now``'s second within its minute's item."""
    return f"s{int(now) % SECONDS_PER_MINUTE}"


class DynamoDbRequestBudgets:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def spend(
        self,
        budget_key: str,
        now: float,
        limits: RequestLimits,
        units: int = 1,
        *,
        second: bool = True,
    ) -> bool:
        if units > limits.per_minute or (second and units > limits.per_second):
            return False  # more than a whole window holds: no write can admit it
        minute = minute_of(now)
        names = {"#minute": "requests"}
        counted: dict[str, Any] = {
            ":units": {"N": str(units)},
            ":minute_room": {"N": str(limits.per_minute - units)},
            ":expires": {"N": str((minute + EXPIRY_MINUTES) * SECONDS_PER_MINUTE)},
        }
        update, condition = "SET expires_at = :expires ADD #minute :units", WITHIN_MINUTE
        if second:
            names["#second"] = second_counter(now)
            counted[":second_room"] = {"N": str(limits.per_second - units)}
            update, condition = f"{update}, #second :units", f"{condition} AND {WITHIN_SECOND}"
        try:
            dynamodb_call(
                "UpdateItem",
                self._client.update_item,
                TableName=self._table,
                Key=_key(f"{BUDGET_PREFIX}{budget_key}#{minute}"),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=counted,
            )
        except ConditionRefused:
            return False
        return True

    def balance(self) -> BalanceReading | None:
        answer = dynamodb_call(
            "GetItem",
            self._client.get_item,
            TableName=self._table,
            Key=_key(BALANCE_ID),
            ConsistentRead=True,
        )
        item: dict[str, Any] = answer.get("Item") or {}
        if "read_at" not in item:
            return None
        balance = item.get("balance", {}).get("N")
        return BalanceReading(
            read_at=float(item["read_at"]["N"]),
            balance=float(balance) if balance is not None else None,
            error_code=item.get("error_code", {}).get("S", ""),
        )

    def claim_balance_refresh(self, now: float, interval_seconds: float) -> bool:
        try:
            dynamodb_call(
                "UpdateItem",
                self._client.update_item,
                TableName=self._table,
                Key=_key(BALANCE_ID),
                UpdateExpression="SET claimed_at = :now",
                ConditionExpression=REFRESH_DUE,
                ExpressionAttributeValues={
                    ":now": {"N": repr(now)},
                    ":due": {"N": repr(now - interval_seconds)},
                },
            )
        except ConditionRefused:
            return False
        return True

    def record_balance(self, reading: BalanceReading) -> None:
        if reading.balance is not None:
            expression, answer = (
                "SET read_at = :at, balance = :answer REMOVE error_code",
                {"N": repr(reading.balance)},
            )
        else:
            expression, answer = (
                "SET read_at = :at, error_code = :answer REMOVE balance",
                {"S": reading.error_code},
            )
        dynamodb_call(
            "UpdateItem",
            self._client.update_item,
            TableName=self._table,
            Key=_key(BALANCE_ID),
            UpdateExpression=expression,
            ExpressionAttributeValues={":at": {"N": repr(reading.read_at)}, ":answer": answer},
        )


def _key(item_id: str) -> dict[str, Any]:
    return {"id": {"S": item_id}}
