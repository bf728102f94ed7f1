"""The poller's due tasks by provider account: each is asked through its own account only.

The due index does not hold a task's account (its projection is fixed once the index exists:
DynamoDB cannot change a global secondary index's projection,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Projections), so
with more than one account the accounts of a sweep's tasks are read in BatchGetItem requests
(``task_id, provider_account`` only); with one account nothing is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import DueTask
from pingback_guard.logic.accounts import ProviderAccounts


def with_accounts(
    tasks: Sequence[DueTask], accounts: ProviderAccounts, store: TaskStore
) -> list[DueTask]:
    """The tasks with their provider accounts (a StoreError leaves them due, for the next
    sweep)."""
    if not accounts.has_several or not tasks:
        return list(tasks)
    account_of = store.provider_accounts_of([task.task_id for task in tasks])
    return [replace(task, provider_account=account_of.get(task.task_id)) for task in tasks]


def by_account(tasks: Iterable[DueTask]) -> list[list[DueTask]]:
    """The tasks grouped by account, each group in the order given (an ids= batch is one
    account's)."""
    groups: dict[str | None, list[DueTask]] = {}
    for task in tasks:
        groups.setdefault(task.provider_account, []).append(task)
    return list(groups.values())
