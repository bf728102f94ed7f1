"""Every path that stores a token says how old it may be and whether it is still usable."""

from __future__ import annotations

from pingback_guard.domain.task import (
    CaptchaRequest,
    DeliveryPath,
    NewTask,
    TaskResult,
    TokenLifetimes,
)
from pingback_guard.kinds.registry import lifetime_seconds
from pingback_guard.logic.poll_schedule import SolveTimes
from pingback_guard.logic.poller import PollerService
from pingback_guard.logic.replay import ReplayService
from pingback_guard.logic.results import unread_delivery
from pingback_guard.queue.dead_letter import encode_message
from tests.fakes import (
    RECAPTCHA_REQUEST,
    TOKEN_LIFETIMES,
    UNIT_POLL_POLICY,
    FakeProvider,
    InMemoryTaskStore,
    nonce_for,
)

TOKEN = "03AFcWeA5" + "d" * 700
# Replay refuses timestamps before 2020: a real arrival time.
ARRIVED = 1_750_000_012.5


class StoredTokens:
    """The tokens a path reported stored, and the requests their writes handed back."""

    def __init__(self) -> None:
        self.results: list[TaskResult] = []
        self.requests: list[CaptchaRequest | None] = []

    def __call__(self, result: TaskResult, request: CaptchaRequest | None) -> None:
        self.results.append(result)
        self.requests.append(request)


def test_a_poll_recovery_counts_its_age_from_the_submit() -> None:
    store, stored = InMemoryTaskStore(), StoredTokens()
    store.record_submission(NewTask("1", RECAPTCHA_REQUEST, 1000.0, 1120.0))
    poller = PollerService(
        store,
        FakeProvider(answers={"1": TOKEN}),
        UNIT_POLL_POLICY,
        SolveTimes(default_seconds=20),
        on_token_stored=stored,
    )
    poller.sweep(now=1130.0, remaining_seconds=lambda: 60.0)
    (result,) = stored.results
    assert stored.requests == [RECAPTCHA_REQUEST]
    assert (result.delivered_via, result.finished_after, result.received_at) == (
        DeliveryPath.POLL,
        1000.0,
        1130.0,
    )
    delivery = unread_delivery(result, TOKEN_LIFETIMES, 1130.0, None)
    assert (delivery.age_seconds, delivery.usable) == (130.0, False)


def test_a_replay_counts_from_the_original_arrival_and_only_once() -> None:
    store, stored = InMemoryTaskStore(), StoredTokens()
    store.record_submission(
        NewTask("5", RECAPTCHA_REQUEST, ARRIVED - 20, ARRIVED, nonce=nonce_for("5"))
    )
    service = ReplayService(store, on_token_stored=stored)
    pingback = TaskResult("5", TOKEN, DeliveryPath.CALLBACK, ARRIVED, nonce=nonce_for("5"))
    body = encode_message(pingback, "table down")
    service.replay(body)
    service.replay(body)
    (result,) = stored.results
    assert stored.requests == [RECAPTCHA_REQUEST]
    assert result.finished_at_earliest == ARRIVED
    delivery = unread_delivery(result, TOKEN_LIFETIMES, ARRIVED + 87.5, None)
    assert (delivery.path, delivery.age_seconds, delivery.usable) == (
        DeliveryPath.REPLAY,
        87.5,
        True,
    )


def test_a_failure_is_no_token_delivery() -> None:
    stored = StoredTokens()
    body = encode_message(
        TaskResult("6", "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.CALLBACK, ARRIVED), "x"
    )
    ReplayService(InMemoryTaskStore(), on_token_stored=stored).replay(body)
    assert stored.results == []


def test_an_unknown_kind_is_judged_with_the_shortest_lifetime() -> None:
    lifetimes = TokenLifetimes(
        recaptcha=120, hcaptcha=90, turnstile=300, geetest=120, cloudflare_challenge=1800
    )
    result = TaskResult("7", TOKEN, DeliveryPath.CALLBACK, received_at=0.0)
    assert unread_delivery(result, lifetimes, 89.9, None).usable is True
    assert unread_delivery(result, lifetimes, 90.0, None).usable is False
    assert lifetime_seconds(lifetimes, "funcaptcha") == 90
    assert lifetime_seconds(lifetimes, "turnstile") == 300
    assert lifetime_seconds(lifetimes, "base64") is None


def test_a_delivery_is_judged_by_its_kinds_lifetime_the_shortest_when_unknown() -> None:
    """A replay 10 minutes late of an image answer (no lifetime) is not an unusable token; a
    Turnstile token 200 s old is still usable (300 s); a result of a kind unknown is judged by
    the shortest lifetime (120 s). Before, every kind was judged by the shortest."""
    result = TaskResult("9", "два слова", DeliveryPath.REPLAY, ARRIVED)
    image = CaptchaRequest("base64", {"phrase": "1"})
    turnstile = CaptchaRequest("turnstile", {"sitekey": "0x4", "pageurl": "https://a.test"})
    late = ARRIVED + 600
    assert unread_delivery(result, TOKEN_LIFETIMES, late, image).usable
    assert not unread_delivery(result, TOKEN_LIFETIMES, late, turnstile).usable
    assert unread_delivery(result, TOKEN_LIFETIMES, ARRIVED + 200, turnstile).usable
    assert not unread_delivery(result, TOKEN_LIFETIMES, ARRIVED + 200, None).usable
