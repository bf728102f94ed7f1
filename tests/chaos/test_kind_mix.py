"""The chaos run's kind mix: every kind of the stack, in the stated proportions, each document a
valid request; and the report's per-kind figures."""

from __future__ import annotations

import itertools
from collections import Counter

from infra.chaos.checker import figures_by_kind
from infra.chaos.kind_mix import KIND_MIX, KIND_OF_METHOD, documents
from pingback_guard.kinds.json_fields import request_from_json
from pingback_guard.kinds.registry import KIND_NAMES


def test_every_20_tasks_hold_the_stated_mix_of_every_kind() -> None:
    first = list(itertools.islice(documents(), 20))
    shares = Counter(next(name for name, _, d in KIND_MIX if d is document) for document in first)
    assert shares == {name: share for name, share, _ in KIND_MIX}
    assert {KIND_OF_METHOD[str(d["method"])] for _, _, d in KIND_MIX} == set(KIND_NAMES)


def test_every_document_of_the_mix_is_a_valid_request() -> None:
    for _name, _share, document in KIND_MIX:
        request_from_json(document)


def test_figures_per_kind_count_lost_wrong_and_the_age_in_hand() -> None:
    truth = [
        {"id": "1", "method": "base64", "outcome": "solved", "finished_at": 100.0},
        {"id": "2", "method": "post", "outcome": "solved", "finished_at": 100.0},
        {"id": "3", "method": "geetest", "outcome": "solved", "finished_at": 100.0},
    ]
    by_kind = figures_by_kind(truth, lost=["2"], wrong=["3"], had_at={"1": 104.0, "3": None})
    assert by_kind["image"]["tasks"] == 2 and by_kind["image"]["lost"] == 1
    assert by_kind["image"]["token_age_at_worker_seconds"]["count"] == 1
    assert (by_kind["geetest"]["wrong"], by_kind["geetest"]["lost"]) == (1, 0)
