"""The sync worker client against a scripted transport: requests sent, answers read, errors."""

from __future__ import annotations

import pytest

from pingback_guard_client import (
    ApiError,
    Client,
    CredentialsError,
    Pacing,
    PingbackUrl,
    ServiceUnavailable,
    TaskNotFound,
    TokenUnusable,
    Unsolvable,
    WaitTimeout,
)
from pingback_guard_client.transport import HttpAnswer, TransportFailure
from tests.client.fake_transport import FakeClock, FakeTransport, client_with, solved, view

SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE = "https://example.com/login"


def test_submit_posts_the_task_with_its_extras_and_returns_the_id() -> None:
    client, transport, _ = client_with(HttpAnswer(202, {"task_id": "42", "status": "PENDING"}))
    assert client.submit("userrecaptcha", SITEKEY, PAGE, version="v3", action="login") == "42"
    assert transport.requests == [
        (
            "POST",
            "/tasks",
            {
                "method": "userrecaptcha",
                "sitekey": SITEKEY,
                "page_url": PAGE,
                "extras": {"version": "v3", "action": "login"},
            },
        )
    ]


def test_429_and_503_are_retried_with_backoff_then_succeed() -> None:
    client, transport, clock = client_with(
        HttpAnswer(429, {"message": "Too Many Requests"}),
        HttpAnswer(503, {"error": "temporarily unavailable"}, retry_after=2.5),
        HttpAnswer(202, {"task_id": "42"}),
    )
    assert client.submit("userrecaptcha", SITEKEY, PAGE) == "42"
    assert len(transport.requests) == 3
    assert 0.5 <= clock.slept[0] <= 1.0 and clock.slept[1] == 2.5


def test_retries_are_bounded_and_end_in_service_unavailable() -> None:
    client, transport, _ = client_with(*[HttpAnswer(503, {"error": "x"})] * 3)
    with pytest.raises(ServiceUnavailable):
        client.task("42")
    assert len(transport.requests) == 3


def test_a_submit_the_provider_took_but_the_stack_did_not_record_is_never_resent() -> None:
    client, transport, _ = client_with(
        HttpAnswer(503, {"error": "accepted by the provider but not recorded", "task_id": "77"})
    )
    with pytest.raises(ServiceUnavailable) as raised:
        client.submit("userrecaptcha", SITEKEY, PAGE)
    assert raised.value.task_id == "77" and len(transport.requests) == 1


def test_a_submit_without_answer_is_resent_only_if_it_never_left() -> None:
    refused, _, _ = client_with(
        TransportFailure("ConnectionError", sent=False), HttpAnswer(202, {"task_id": "42"})
    )
    assert refused.submit("userrecaptcha", SITEKEY, PAGE) == "42"
    timed_out, transport, _ = client_with(TransportFailure("ReadTimeout", sent=True))
    with pytest.raises(ServiceUnavailable):
        timed_out.submit("userrecaptcha", SITEKEY, PAGE)
    assert len(transport.requests) == 1


def test_an_unanswered_read_is_retried() -> None:
    client, _, clock = client_with(
        TransportFailure("ReadTimeout", sent=True), solved(FakeClock().now)
    )
    assert client.task("42").status == "SOLVED" and len(clock.slept) == 1


def test_wait_polls_about_every_second_until_solved() -> None:
    now = FakeClock().now
    client, transport, clock = client_with(view(), view(), solved(now + 2))
    solution = client.wait("42", timeout=30)
    assert solution.token == "03AGdBq2-token"
    assert clock.slept == [1.0, 1.0]
    assert [r[:2] for r in transport.requests] == [("GET", "/tasks/42")] * 3
    assert (solution.finished_at_earliest, solution.finished_at_latest) == (now - 3, now)
    assert solution.usable_until == now + 117 and solution.delivered_via == "callback"
    assert solution.age_at(now + 2) == 5.0 and "03AG" not in repr(solution)


def test_wait_looks_again_when_the_stack_says_a_look_is_worthwhile() -> None:
    now = FakeClock().now
    client, transport, clock = client_with(
        view(retry_after=20), view(retry_after=7), solved(now + 27)
    )
    assert client.wait("42", timeout=60).token == "03AGdBq2-token"
    assert clock.slept == [20.0, 7.0] and len(transport.requests) == 3


def test_a_hint_far_ahead_is_capped_and_hints_can_be_ignored() -> None:
    client, _, clock = client_with(view(retry_after=500), solved(FakeClock().now + 30))
    client.wait("42", timeout=600)
    assert clock.slept == [Pacing().max_interval]
    every_second = Client(
        "https://unused.example",
        region="us-east-1",
        transport=FakeTransport([view(retry_after=20), solved(FakeClock().now + 1)]),
        pacing=Pacing(interval=1.0, follow_hints=False),
        clock=clock.time,
        sleep=clock.sleep,
    )
    clock.slept.clear()
    every_second.wait("42", timeout=60)
    assert clock.slept == [1.0]


def test_solve_first_looks_when_the_submit_says_the_task_is_likely_ready() -> None:
    now = FakeClock().now
    client, transport, clock = client_with(
        HttpAnswer(202, {"task_id": "42", "status": "PENDING", "retry_after": 25}),
        solved(now + 25),
    )
    assert client.solve("userrecaptcha", SITEKEY, PAGE).task_id == "42"
    assert clock.slept == [25.0] and [r[0] for r in transport.requests] == ["POST", "GET"]


def test_a_worker_that_ignores_hints_looks_at_once_not_when_the_submit_says() -> None:
    """Issue 33: a worker GETting every second still made its first look when the submit said
    the task was likely ready (25 s), so with pingbacks delivered it held a token that landed
    at 10 s for 15 s: a worker that asks more must never get an older answer."""
    clock = FakeClock()
    transport = FakeTransport(
        [
            HttpAnswer(202, {"task_id": "42", "status": "PENDING", "retry_after": 25}),
            view(retry_after=24),
            solved(clock.now + 1),
        ]
    )
    every_second = Client(
        "https://unused.example",
        region="us-east-1",
        transport=transport,
        pacing=Pacing(interval=1.0, follow_hints=False),
        clock=clock.time,
        sleep=clock.sleep,
    )
    assert every_second.solve("userrecaptcha", SITEKEY, PAGE).task_id == "42"
    assert clock.slept == [1.0] and [r[0] for r in transport.requests] == ["POST", "GET", "GET"]


def test_wait_rides_out_an_outage_of_the_stack_until_its_deadline() -> None:
    now = FakeClock().now
    outage = [HttpAnswer(503, {"error": "task store unavailable; try again"})] * 3
    client, transport, _ = client_with(*outage, view(), solved(now + 10))
    assert client.wait("42", timeout=60).token == "03AGdBq2-token"
    assert len(transport.requests) == 5
    down, _, _ = client_with(*outage * 10)
    with pytest.raises(ServiceUnavailable):
        down.wait("42", timeout=5)


def test_wait_gives_up_after_its_timeout() -> None:
    client, transport, _ = client_with(*[view()] * 10)
    with pytest.raises(WaitTimeout) as raised:
        client.wait("42", timeout=2.5)
    assert raised.value.task_id == "42" and len(transport.requests) == 4


@pytest.mark.parametrize("status", ["FAILED", "EXPIRED"])
def test_a_task_that_ended_without_token_is_unsolvable(status: str) -> None:
    client, _, _ = client_with(view(status, error="ERROR_CAPTCHA_UNSOLVABLE"))
    with pytest.raises(Unsolvable) as raised:
        client.wait("42")
    assert (raised.value.status, raised.value.error) == (status, "ERROR_CAPTCHA_UNSOLVABLE")


def test_an_expired_token_is_token_unusable_by_the_stack_s_word_or_the_clock() -> None:
    now = FakeClock().now
    client, _, _ = client_with(solved(now, usable=False, usable_until=now - 1))
    with pytest.raises(TokenUnusable):
        client.wait("42")
    stale, _, _ = client_with(solved(now, usable=None, usable_until=now - 1))
    with pytest.raises(TokenUnusable):
        stale.wait("42")


def test_a_view_without_the_freshness_keys_is_still_read_pessimistically() -> None:
    now = FakeClock().now
    answer = view("SOLVED", solution="tok", submitted_at=now - 20, received_at=now - 1)
    solution = client_with(answer)[0].wait("42")
    assert (solution.finished_at_earliest, solution.finished_at_latest) == (now - 20, now - 1)
    assert solution.usable_until is None


def test_solve_submits_then_waits() -> None:
    now = FakeClock().now
    client, transport, _ = client_with(HttpAnswer(202, {"task_id": "42"}), view(), solved(now + 1))
    assert client.solve("turnstile", SITEKEY, PAGE, timeout=10).token == "03AGdBq2-token"
    assert [r[0] for r in transport.requests] == ["POST", "GET", "GET"]


def test_report_sends_correctness_and_maps_refusals() -> None:
    client, transport, _ = client_with(
        HttpAnswer(200, {"task_id": "42", "reported": "bad"}),
        HttpAnswer(409, {"error": "already_reported"}),
        HttpAnswer(404, {"error": "unknown_task"}),
    )
    assert client.report("42", correct=False) == "bad"
    assert transport.requests[0] == ("POST", "/tasks/42/report", {"correct": False})
    with pytest.raises(ApiError) as conflict:
        client.report("42", correct=True)
    assert (conflict.value.status, conflict.value.error) == (409, "already_reported")
    with pytest.raises(TaskNotFound):
        client.report("43", correct=True)


def test_pingback_url_and_register_for_a_task_submitted_elsewhere() -> None:
    client, transport, _ = client_with(
        HttpAnswer(201, {"pingback_url": "https://x/callback/v1.n.m", "expires_at": 1700000000}),
        HttpAnswer(201, {"task_id": "9001"}),
    )
    pingback = client.pingback_url()
    assert pingback == PingbackUrl("https://x/callback/v1.n.m", 1700000000.0)
    assert "v1.n.m" not in repr(pingback)
    assert client.register("9001", pingback, "hcaptcha", SITEKEY, PAGE, invisible=1) == "9001"
    assert transport.requests[1] == (
        "PUT",
        "/tasks/9001",
        {
            "pingback_url": "https://x/callback/v1.n.m",
            "method": "hcaptcha",
            "sitekey": SITEKEY,
            "page_url": PAGE,
            "extras": {"invisible": 1},
        },
    )


def test_bad_input_and_refused_signatures_have_their_own_errors() -> None:
    client, _, _ = client_with(
        HttpAnswer(400, {"error": "bad_request", "reason": "sitekey is required"}),
        HttpAnswer(403, {"message": "Forbidden"}),
    )
    with pytest.raises(ApiError) as bad:
        client.submit("userrecaptcha", "", PAGE)
    assert (bad.value.error, bad.value.reason) == ("bad_request", "sitekey is required")
    with pytest.raises(CredentialsError):
        client.task("42")


def test_task_ids_are_escaped_in_paths() -> None:
    client, transport, _ = client_with(HttpAnswer(404, {"error": "unknown_task"}))
    with pytest.raises(TaskNotFound):
        client.task("../admin")
    assert transport.requests[0][1] == "/tasks/..%2Fadmin"


def test_the_region_comes_from_an_execute_api_url() -> None:
    from pingback_guard_client.client import _region_of

    assert _region_of("https://abc123.execute-api.eu-central-1.amazonaws.com") == "eu-central-1"
