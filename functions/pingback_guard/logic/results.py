"""The one rule for storing any delivered result, whichever path brought it, and what the
delivery tells about the token's freshness."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    RecordedSolution,
    Task,
    TaskResult,
    TokenLifetimes,
)
from pingback_guard.kinds.base import ParsedAnswer
from pingback_guard.kinds.registry import kind_of, lifetime_seconds, parse_answer

# A solution newly stored, with the request its task was stored with (None: a kind unknown).
TokenStored = Callable[[TaskResult, CaptchaRequest | None], None]


@dataclass(frozen=True)
class JudgedAnswer:
    """A stored answer read against its task's kind: ``fits`` False flags an answer the kind
    does not expect. The answer stays stored and served as sent either way."""

    kind: str | None
    parsed: ParsedAnswer


def judged_answer(request: CaptchaRequest | None, result: TaskResult) -> JudgedAnswer:
    """The answer read against the request its task was stored with (None: a kind unknown)."""
    kind = kind_of(request.method if request else None)
    return JudgedAnswer(kind.name if kind else None, parse_answer(request, result.code))


def store_result(store: TaskStore, result: TaskResult) -> RecordedSolution:
    """A token is a solution (first one wins); an error code marks the task FAILED. A newly
    stored solution comes back with its task as written (its kind, at no read)."""
    if result.is_failure:
        return RecordedSolution(store.record_failure(result))
    return store.record_solution(result)


def stored_request(recorded: RecordedSolution) -> CaptchaRequest | None:
    return recorded.task.request if recorded.task else None


@dataclass(frozen=True)
class Delivery:
    """A token newly stored: how old it may already be, and whether it can still be used."""

    path: DeliveryPath
    age_seconds: float
    usable: bool


def delivery_of(result: TaskResult, usable_until: float, delivered_at: float) -> Delivery:
    """The age counts from the earliest moment the provider can have finished the token."""
    return Delivery(
        path=result.delivered_via,
        age_seconds=max(0.0, delivered_at - result.finished_at_earliest),
        usable=delivered_at < usable_until,
    )


def stored_delivery(result: TaskResult, stored: Task, delivered_at: float) -> Delivery:
    """The table computed usable_until from the task's own CAPTCHA kind."""
    return delivery_of(result, _known_or_zero(stored.usable_until), delivered_at)


def unread_delivery(
    result: TaskResult,
    lifetimes: TokenLifetimes,
    delivered_at: float,
    request: CaptchaRequest | None,
) -> Delivery:
    """A path that does not read the task judges by the request its storing write handed back:
    its kind's lifetime, none for an answer without one (image text, BLS cells: a replay of
    one minutes late is not an unusable token); the shortest for a kind unknown (None), so a
    token may be counted unusable a little early, never counted usable when it is not."""
    lifetime = lifetime_seconds(lifetimes, request.method if request else None)
    if lifetime is None:
        return delivery_of(result, math.inf, delivered_at)
    return delivery_of(result, result.finished_at_earliest + lifetime, delivered_at)


def _known_or_zero(value: float | None) -> float:
    return 0.0 if value is None else value
