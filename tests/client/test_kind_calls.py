"""The per-kind calls (normal, grid, ..., bls) of both clients: the request document each posts,
its first look when the submit says, and the Solution with the stack's parsed answer."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pingback_guard_client import AsyncClient, Client, Solution
from pingback_guard_client.transport import HttpAnswer
from tests.client.fake_transport import FakeClock, FakeTransport, client_with, solved

PNG = b"\x89PNG\r\n\x1a\n-cell"
PNG_BASE64 = base64.b64encode(PNG).decode()
PAGE = "https://example.com/login"
PROXY = {"type": "HTTP", "uri": "login:password@127.0.0.1:3128"}
GEETEST_ANSWER = {"challenge": "c1", "validate": "v1", "seccode": "v1|jordan"}

# name -> (the call, with its arguments; the document it must post)
CALLS: dict[str, tuple[Callable[[Any], Any], dict[str, Any]]] = {
    "normal": (
        lambda c: c.normal(PNG, phrase=1, minLen=2),
        {"method": "base64", "body": PNG_BASE64, "phrase": 1, "minLen": 2},
    ),
    "grid": (
        lambda c: c.grid(PNG, rows=3, cols=3, hintText="cats"),
        {
            "method": "base64",
            "body": PNG_BASE64,
            "recaptcha": 1,
            "rows": 3,
            "cols": 3,
            "hintText": "cats",
        },
    ),
    "coordinates": (
        lambda c: c.coordinates(PNG_BASE64),
        {"method": "base64", "body": PNG_BASE64, "coordinatescaptcha": 1},
    ),
    "recaptcha": (
        lambda c: c.recaptcha("6Le-key", PAGE, version="v3", enterprise=1, score=0.7),
        {
            "method": "userrecaptcha",
            "sitekey": "6Le-key",
            "url": PAGE,
            "version": "v3",
            "enterprise": 1,
            "score": 0.7,
        },
    ),
    "hcaptcha": (
        lambda c: c.hcaptcha("a5f7-key", PAGE, invisible=1),
        {"method": "hcaptcha", "sitekey": "a5f7-key", "url": PAGE, "invisible": 1},
    ),
    "turnstile": (
        lambda c: c.turnstile("0x4AAA", PAGE, action="login"),
        {"method": "turnstile", "sitekey": "0x4AAA", "url": PAGE, "action": "login"},
    ),
    "geetest": (
        lambda c: c.geetest("gt-1", "challenge-1", PAGE, apiServer="api.geetest.com"),
        {
            "method": "geetest",
            "gt": "gt-1",
            "challenge": "challenge-1",
            "url": PAGE,
            "apiServer": "api.geetest.com",
        },
    ),
    "geetest_v4": (
        lambda c: c.geetest_v4("e392e1d7", PAGE),
        {"method": "geetest", "version": 4, "captcha_id": "e392e1d7", "url": PAGE},
    ),
    "cloudflare_challenge": (
        lambda c: c.cloudflare_challenge(PAGE, "Mozilla/5.0", PROXY),
        {"method": "cloudflare_challenge", "url": PAGE, "userAgent": "Mozilla/5.0", "proxy": PROXY},
    ),
    "bls": (
        lambda c: c.bls("664", [PNG, PNG]),
        {
            "method": "bls",
            "instructions": "664",
            "image_base64_1": PNG_BASE64,
            "image_base64_2": PNG_BASE64,
        },
    ),
    "cloudflare_challenge_without_user_agent": (
        lambda c: c.cloudflare_challenge(PAGE, None, PROXY),
        {"method": "cloudflare_challenge", "url": PAGE, "proxy": PROXY},
    ),
    "captchafox": (
        lambda c: c.captchafox("sk_fox", PAGE, PROXY),
        {"method": "captchafox", "sitekey": "sk_fox", "url": PAGE, "proxy": PROXY},
    ),
    "friendly_captcha": (
        lambda c: c.friendly_captcha("FCMST5", PAGE, version="v2"),
        {"method": "friendly_captcha", "sitekey": "FCMST5", "url": PAGE, "version": "v2"},
    ),
    "lemin": (
        lambda c: c.lemin("CROPPED_3dfdd5c", "lemin-div", PAGE),
        {"method": "lemin", "captcha_id": "CROPPED_3dfdd5c", "div_id": "lemin-div", "url": PAGE},
    ),
}


def geetest_solved(now: float) -> HttpAnswer:
    raw = '{"challenge":"c1","validate":"v1","seccode":"v1|jordan"}'
    return solved(now, raw, kind="geetest", answer=GEETEST_ANSWER, answer_fits=True)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_sync_call_posts_its_kind_s_document_and_looks_when_the_submit_says(
    name: str,
) -> None:
    call, document = CALLS[name]
    client, transport, clock = client_with(
        HttpAnswer(202, {"task_id": "42", "retry_after": 7}), solved(FakeClock().now + 7)
    )

    solution = call(client)

    assert transport.requests == [("POST", "/tasks", document), ("GET", "/tasks/42", None)]
    assert clock.slept == [7] and solution.task_id == "42"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_async_call_posts_the_same_document_and_awaits_the_solution(name: str) -> None:
    call, document = CALLS[name]
    transport = FakeTransport([HttpAnswer(202, {"task_id": "42"}), solved(time.time())])
    client = AsyncClient(
        client=Client("https://unused.example", region="us-east-1", transport=transport)
    )

    async def run() -> Solution:
        async with client:
            solution: Solution = await call(client)
            return solution

    assert asyncio.run(run()).token == "03AGdBq2-token"
    assert transport.requests == [("POST", "/tasks", document), ("GET", "/tasks/42", None)]


def test_the_solution_carries_the_raw_answer_and_the_stack_s_parsed_form() -> None:
    client, _, clock = client_with(
        HttpAnswer(202, {"task_id": "42"}), geetest_solved(FakeClock().now)
    )
    solution = client.geetest("gt-1", "challenge-1", PAGE)
    assert solution.raw == '{"challenge":"c1","validate":"v1","seccode":"v1|jordan"}'
    assert (solution.kind, solution.answer, solution.answer_fits) == (
        "geetest",
        GEETEST_ANSWER,
        True,
    )
    assert clock.slept == []


def test_an_image_is_read_from_a_path_and_sent_base64(tmp_path: Path) -> None:
    image = tmp_path / "captcha.png"
    image.write_bytes(PNG)
    client, transport, _ = client_with(HttpAnswer(202, {"task_id": "42"}), solved(FakeClock().now))
    client.normal(str(image))
    assert transport.requests[0][2] == {"method": "base64", "body": PNG_BASE64}


@pytest.mark.parametrize("cells", [0, 10])
def test_bls_takes_one_to_nine_cells_and_sends_nothing_otherwise(cells: int) -> None:
    client, transport, _ = client_with()
    with pytest.raises(ValueError, match="1 to 9 images"):
        client.bls("664", [PNG] * cells)
    assert transport.requests == []


def test_on_the_class_a_kind_call_is_its_one_document_builder_for_both_clients() -> None:
    request = Client.grid(PNG, rows=4, timeout=30)
    assert request.document == {"method": "base64", "body": PNG_BASE64, "recaptcha": 1, "rows": 4}
    assert request.timeout == 30 and AsyncClient.grid is Client.grid
