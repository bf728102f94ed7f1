"""Give moto's DynamoDB the per-item atomicity real DynamoDB has.

moto evaluates a ConditionExpression and then applies the write as two steps, so two threads
(or two requests to a threaded moto server) can both pass ``attribute_not_exists(solution)``.
DynamoDB never allows that. Every suite and the local stack call this before they start moto, so
a race our code loses is a real bug and not moto's.

Query and Scan walk the table's item dict (every item: moto has no index structure), and a write
adding an item during the walk made them fail with "dictionary changed size during iteration" (a
500 to the caller, seen in the 10,000-task soak). They walk a snapshot of the items instead:
taking the write lock for the walk would hold every write for as long as a Query over the whole
table takes (seconds at 10,000 items on a busy machine). And an UpdateItem replaces the item with
an updated copy instead of changing it in place: moto changed the very object a Query was reading,
so the due index once returned an item whose `due_at` the poller had just removed (a KeyError in
the soak), which DynamoDB never does (every read sees an item whole, before or after a write).
The copy is made and updated on a detached view of the table and only then put in place: an
UpdateItem that creates its item first stored the key alone, so a Scan of CI's loaded run saw an
item without the attribute the update was setting, and the stream got two INSERT records (the
bare key, then the item) where DynamoDB writes one.

Atomicity is per item, as in DynamoDB: a write holds the lock of its item's partition key (one of
64 striped locks), not one lock for the whole backend. With one lock, every write of the local
stack queued behind whichever write the GIL had just descheduled, and under the soak's load a
write took about a second (the poller, one thread, recovered about one task a second). A
transaction holds every stripe; the stream of a table takes its records one at a time (moto
numbers a record by the length of its list).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

ITEM_WRITE_METHODS = ("put_item", "update_item", "delete_item")
LOCK_STRIPES = 64
_item_locks = tuple(threading.RLock() for _ in range(LOCK_STRIPES))
_stream_lock = threading.Lock()
_detached = threading.local()
_MARK = "_pingback_guard_atomic"


class SnapshotItems(defaultdict[Any, Any]):
    """A table's items whose ``values()`` is a list taken at once (atomic under the GIL)."""

    def values(self) -> list[Any]:  # type: ignore[override]
        return list(super().values())


def make_dynamodb_writes_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import StreamShard, Table

    for name in ITEM_WRITE_METHODS:
        original = getattr(DynamoDBBackend, name)
        if getattr(original, _MARK, False):
            continue
        if name == "update_item":
            original = _update_detached(original)
        setattr(DynamoDBBackend, name, _one_write_per_item(original))
    if not getattr(DynamoDBBackend.transact_write_items, _MARK, False):
        DynamoDBBackend.transact_write_items = _holding(  # type: ignore[method-assign]
            _item_locks, DynamoDBBackend.transact_write_items
        )
    if not getattr(DynamoDBBackend.get_table, _MARK, False):
        DynamoDBBackend.get_table = _detached_view_first(  # type: ignore[method-assign]
            DynamoDBBackend.get_table
        )
    if not getattr(StreamShard.add, _MARK, False):
        StreamShard.add = _holding((_stream_lock,), StreamShard.add)  # type: ignore[method-assign]
    if not getattr(Table.__init__, _MARK, False):
        Table.__init__ = _with_snapshot_items(Table.__init__)  # type: ignore[method-assign]


def item_lock(backend: Any, table_name: str, item_or_key: Any) -> threading.RLock:
    """The lock a write of this item holds: its table's and partition key's stripe."""
    from moto.dynamodb.exceptions import ResourceNotFoundException

    try:
        partition_key = item_or_key[backend.get_table(table_name).hash_key_attr]
    except (ResourceNotFoundException, KeyError, TypeError):
        return _item_locks[0]  # moto answers the request with its own error
    stripe = hash((table_name, json.dumps(partition_key, sort_keys=True))) % LOCK_STRIPES
    return _item_locks[stripe]


def _one_write_per_item(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(backend: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        item_or_key = args[0] if args else kwargs.get("item_attrs", kwargs.get("key"))
        with item_lock(backend, table_name, item_or_key):
            return method(backend, table_name, *args, **kwargs)

    setattr(locked, _MARK, True)
    return locked


def _holding(
    locks: Sequence[AbstractContextManager[Any]], method: Callable[..., Any]
) -> Callable[..., Any]:
    """The method with every one of these locks held, taken in their order."""

    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(lock)
            return method(*args, **kwargs)

    setattr(locked, _MARK, True)
    return locked


def _update_detached(update_item: Callable[..., Any]) -> Callable[..., Any]:
    """UpdateItem run by moto on a view of the table holding a copy of the item alone, its
    result put in place in one step with one stream record (``get_table`` answers the view to
    the thread running the update)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    @functools.wraps(update_item)
    def update_detached(backend: Any, table_name: str, key: Any, *args: Any, **kwargs: Any) -> Any:
        table = backend.get_table(table_name)
        key_names = (table.hash_key_attr, table.range_key_attr or table.hash_key_attr)
        if not (isinstance(key, dict) and all(name in key for name in key_names)):
            return update_item(backend, table_name, key, *args, **kwargs)  # moto's own error
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        before = table.get_item(hash_value, range_value)
        view = copy.copy(table)
        view.items, view.stream_shard = SnapshotItems(dict), None
        if before is not None:
            _place(view, hash_value, range_value, copy.deepcopy(before))
        _detached.views = {table_name: view}
        try:
            item = update_item(backend, table_name, key, *args, **kwargs)
        finally:
            _detached.views = {}
        _place(table, hash_value, range_value, item)
        if table.stream_shard is not None:
            table.stream_shard.add(before, item)
        return item

    return update_detached


def _place(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    if range_value is None:
        table.items[hash_value] = item
    else:
        table.items[hash_value][range_value] = item


def _detached_view_first(get_table: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(get_table)
    def view_or_table(backend: Any, table_name: str) -> Any:
        view = getattr(_detached, "views", {}).get(table_name)
        return view if view is not None else get_table(backend, table_name)

    setattr(view_or_table, _MARK, True)
    return view_or_table


def _with_snapshot_items(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def snapshot_init(table: Any, *args: Any, **kwargs: Any) -> None:
        init(table, *args, **kwargs)
        table.items = SnapshotItems(dict, table.items)

    setattr(snapshot_init, _MARK, True)
    return snapshot_init
