"""Provider calls traced by hand: a name, the number of ids and the outcome's type, no text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pingback_guard.domain.errors import ProviderRetryableError
from pingback_guard.provider.traced import TracedProvider
from tests.fakes import FakeProvider

API_KEY = "0123456789abcdef0123456789abcdef"


class RecordingSubsegment:
    def __init__(self, name: str) -> None:
        self.name = name
        self.annotations: dict[str, Any] = {}
        self.exceptions: list[BaseException] = []

    def put_annotation(self, key: str, value: Any) -> None:
        self.annotations[key] = value


class RecordingProvider:
    """Plays X-Ray's recorder: an exception leaving the block would be recorded with its text."""

    def __init__(self) -> None:
        self.subsegments: list[RecordingSubsegment] = []

    @contextmanager
    def in_subsegment(self, name: str | None = None, **_: Any) -> Iterator[RecordingSubsegment]:
        subsegment = RecordingSubsegment(name or "")
        self.subsegments.append(subsegment)
        try:
            yield subsegment
        except BaseException as error:
            subsegment.exceptions.append(error)
            raise


def test_a_call_is_one_subsegment_with_its_size_and_outcome() -> None:
    recorder = RecordingProvider()
    traced = TracedProvider(FakeProvider(), recorder)  # type: ignore[arg-type]
    traced.get_results(["1", "2", "3"])
    [subsegment] = recorder.subsegments
    assert (subsegment.name, subsegment.annotations) == (
        "res.php get",
        {"ids": "3", "outcome": "ok"},
    )


def test_a_failure_is_recorded_by_type_never_by_text() -> None:
    recorder = RecordingProvider()
    failing = FakeProvider(failure=lambda: ProviderRetryableError(f"text with {API_KEY}"))
    traced = TracedProvider(failing, recorder)  # type: ignore[arg-type]
    with pytest.raises(ProviderRetryableError):
        traced.get_results(["1"])
    [subsegment] = recorder.subsegments
    assert subsegment.annotations["outcome"] == "ProviderRetryableError"
    assert subsegment.exceptions == []
    assert API_KEY not in repr(subsegment.annotations)
