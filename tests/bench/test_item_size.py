"""DynamoDB item sizes and capacity units, as the cost model and the poller figure use them."""

from __future__ import annotations

import pytest

from bench.item_size import (
    INDEX_ENTRY_OVERHEAD_BYTES,
    eventual_read_units,
    index_entry_size,
    item_size,
    number_size,
    strong_read_units,
    value_size,
    write_units,
)


@pytest.mark.parametrize(
    ("text", "size"),
    [("0", 2), ("7", 2), ("42", 2), ("123", 3), ("1767225600", 5), ("-12.5", 3), ("0.001", 2)],
)
def test_numbers_take_one_byte_per_two_significant_digits_plus_one(text: str, size: int) -> None:
    assert number_size(text) == size


def test_an_item_is_its_attribute_names_plus_their_values() -> None:
    item: dict[str, dict[str, object]] = {
        "task_id": {"S": "123"},
        "n": {"N": "42"},
        "ok": {"BOOL": True},
    }
    assert item_size(item) == (7 + 3) + (1 + 2) + (2 + 1)


def test_strings_are_counted_in_utf8_bytes() -> None:
    assert value_size({"S": "é"}) == 2


def test_maps_and_lists_carry_three_bytes_plus_one_per_element() -> None:
    assert value_size({"M": {}}) == 3
    assert value_size({"M": {"a": {"S": "xy"}}}) == 3 + (1 + 2 + 1)
    assert value_size({"L": [{"S": "ab"}, {"NULL": True}]}) == 3 + (2 + 1) + (1 + 1)


def test_sets_are_the_sum_of_their_members() -> None:
    assert value_size({"SS": ["ab", "c"]}) == 3
    assert value_size({"NS": ["1", "22"]}) == 4


def test_an_unknown_type_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown attribute type"):
        value_size({"X": "?"})


@pytest.mark.parametrize(("size", "units"), [(0, 1), (1024, 1), (1025, 2), (2448, 3)])
def test_a_write_unit_covers_each_started_kilobyte(size: int, units: int) -> None:
    assert write_units(size) == units


def test_a_strong_read_unit_covers_4_kb_and_an_eventual_read_costs_half() -> None:
    assert strong_read_units(4096) == 1
    assert strong_read_units(4097) == 2
    assert eventual_read_units(4097) == 1.0
    assert eventual_read_units(10) == 0.5


def test_an_index_entry_holds_only_its_attributes_plus_overhead() -> None:
    item = {"task_id": {"S": "1"}, "solution": {"S": "x" * 2000}, "due_at": {"N": "5"}}
    entry = index_entry_size(item, frozenset({"task_id", "due_at"}))
    assert entry == (7 + 1) + (6 + 2) + INDEX_ENTRY_OVERHEAD_BYTES
