"""Every CAPTCHA kind through the real template on the local stack, with the simulator: the
worker client's per-kind calls get exactly the provider's answer, with pingbacks delivered and
with every pingback dropped; odd-but-real answers (spaces, Cyrillic, '/', ';', ',', JSON, 4 KB)
arrive exactly through the callback and through res.php. A GET pingback whose percent-encoded
answer passes HTTP API's request line quota is refused at the gateway, as on AWS, and its answer
is recovered by polling (docs/aws-limits.md)."""

from __future__ import annotations

import asyncio
import base64
import functools
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from infra.local import LocalStack
from infra.local.apigateway.signing import credentials_of
from infra.local.runtime.aws import WORKER
from infra.simulator import Simulator
from infra.simulator.answers import SIM_TEXT_PREFIX
from pingback_guard_client import AsyncClient, Client, Solution
from tests.local.support import QUICK_SOLVES
from tests.local.test_compat_protocol import in_php, issue_key, res_php
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

# The worker client's per-kind calls spell fields as 2captcha does (grid rows/cols, GeeTest v4's
# gt, BLS cells without a data: prefix) and the stack passes them through: so a 2captcha-speaking
# provider. CaptchaAI's spellings are proven by test_captchaai_sdk.py against its default dialect.
SIMULATOR = {**QUICK_SOLVES, "seed": 23, "dialect": "2captcha"}
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s
    "parameter_overrides": {"CallbackTimeoutSeconds": "10", "PollBackoffBaseSeconds": "5"},
}
PAGE = "https://example.test/login"
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2
PROXY = {"type": "HTTP", "uri": "login:password@127.0.0.1:3128"}
KIND_CALLS: dict[str, Callable[[Client], Solution]] = {
    "recaptcha": lambda c: c.recaptcha(
        "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-", PAGE, timeout=90
    ),
    "recaptcha_v3": lambda c: c.recaptcha(
        "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-",
        PAGE,
        "v3",
        score=0.7,
        action="login",
        timeout=90,
    ),
    "hcaptcha": lambda c: c.hcaptcha("a5f74b19-9e45-40e0-b45d-47ff91b7a6c2", PAGE, timeout=90),
    "turnstile": lambda c: c.turnstile("0x4AAAAAAAC3DHQFLr1GavRN", PAGE, timeout=90),
    "normal": lambda c: c.normal(IMAGE, phrase=1, minLen=2, timeout=90),
    # method=post: the stack uploads the image to the provider as a multipart file.
    "post": lambda c: c.solve_document(
        {"method": "post", "file": base64.b64encode(IMAGE).decode(), "numeric": 4}, timeout=90
    ),
    "grid": lambda c: c.grid(IMAGE, rows=3, cols=3, hintText="cats", timeout=90),
    "coordinates": lambda c: c.coordinates(IMAGE, timeout=90),
    "geetest": lambda c: c.geetest(
        "f1ab2cdefa3456789012345678901234", "12345678abc90123d45678ef90123a456b", PAGE, timeout=90
    ),
    "geetest_v4": lambda c: c.geetest_v4("e392e1d7fd421dc63325744d5a2b9c73", PAGE, timeout=90),
    "cloudflare_challenge": lambda c: c.cloudflare_challenge(
        PAGE, "Mozilla/5.0 (X11; Linux x86_64)", PROXY, timeout=90
    ),
    "bls": lambda c: c.bls("664", [IMAGE] * 9, timeout=90),
}
# 4 KB of UTF-8, about 12 KB percent-encoded: its GET pingback's request line is over HTTP API's
# 10,240 bytes (infra/local/apigateway/limits.py).
OVER_THE_REQUEST_LINE_QUOTA = "Ж" * 2048
ODD_ANSWERS = (
    "two words",
    "привет",
    "a/b",
    "x; y",
    "3,14",
    '{"seccode":"9f8e|jordan"}',
    OVER_THE_REQUEST_LINE_QUOTA,
)


@pytest.fixture
def client(stack: LocalStack) -> Iterator[Client]:
    with Client(
        stack.ready.api_url, stack.ready.region, credentials=credentials_of(WORKER)
    ) as worker:
        yield worker


@pytest.fixture(autouse=True)
def calm(simulator: Simulator) -> Iterator[None]:
    yield
    simulator.update_faults(pingback_drop_rate=0.0)


def solve_all(
    client: Client, calls: Mapping[str, Callable[[Client], Solution]]
) -> dict[str, Solution]:
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        running = {name: pool.submit(call, client) for name, call in calls.items()}
        return {name: future.result() for name, future in running.items()}


def provider_answer(simulator: Simulator, task_id: str) -> str:
    return str(next(t for t in simulator.tasks() if str(t["id"]) == task_id)["code"])


@pytest.mark.parametrize("pingbacks", ["delivered", "dropped"])
def test_every_kind_gets_exactly_the_providers_answer(
    client: Client, simulator: Simulator, pingbacks: str
) -> None:
    simulator.update_faults(pingback_drop_rate=1.0 if pingbacks == "dropped" else 0.0)
    solved = solve_all(client, KIND_CALLS)
    for name, solution in solved.items():
        assert solution.raw == provider_answer(simulator, solution.task_id), name
        assert solution.answer_fits is True and solution.answer, name
        assert (solution.delivered_via == "callback") is (pingbacks == "delivered"), name
    assert solved["grid"].answer and solved["grid"].answer["type"] == "grid"
    assert solved["coordinates"].answer and solved["coordinates"].answer["type"] == "coordinates"
    v3 = solved["geetest"].answer or {}
    assert str(v3["seccode"]).endswith("|jordan")
    assert set(solved["geetest_v4"].answer or {}) >= {"lot_number", "pass_token", "captcha_output"}
    clearance = solved["cloudflare_challenge"].answer or {}
    assert clearance["user_agent"] == "Mozilla/5.0 (X11; Linux x86_64)"
    assert solved["post"].kind == "image" and solved["post"].usable_until is None
    assert solved["normal"].usable_until is None and solved["recaptcha"].usable_until is not None
    verdicts = {
        name: client.report(s.task_id, correct=name != "normal") for name, s in solved.items()
    }
    assert verdicts == {name: "bad" if name == "normal" else "good" for name in solved}


@pytest.mark.parametrize("pingbacks", ["delivered", "dropped"])
def test_odd_but_real_answers_arrive_exactly_through_the_callback_and_res_php(
    client: Client, simulator: Simulator, pingbacks: str
) -> None:
    simulator.update_faults(pingback_drop_rate=1.0 if pingbacks == "dropped" else 0.0)
    calls = {
        answer: (lambda c, shown=answer: c.normal(read_as(shown), timeout=90))
        for answer in ODD_ANSWERS
    }
    solved = solve_all(client, calls)
    for answer, solution in solved.items():
        assert solution.raw == answer and solution.answer == {"type": "text", "text": answer}
        if pingbacks == "dropped":
            assert solution.delivered_via != "callback"
        elif answer == OVER_THE_REQUEST_LINE_QUOTA:
            assert solution.delivered_via == "poll"
            assert pingback_outcomes(simulator, solution.task_id) == [413]
        else:
            assert solution.delivered_via == "callback"


def pingback_outcomes(simulator: Simulator, task_id: str) -> list[int | str]:
    """What each pingback the provider sent for the task got back (a status, or what failed)."""
    task = next(t for t in simulator.tasks() if str(t["id"]) == task_id)
    return [attempt["outcome"] for attempt in task["deliveries"]]


def test_the_asyncio_client_s_kind_calls_get_exactly_the_providers_answer(
    client: Client, simulator: Simulator
) -> None:
    """The same per-kind calls awaited, at once, every pingback dropped."""
    simulator.update_faults(pingback_drop_rate=1.0)
    guard = AsyncClient(client=client)

    async def solve() -> list[Solution]:
        return list(
            await asyncio.gather(
                guard.geetest("f1ab2cdefa3456", "12345678abc9", PAGE, timeout=90),
                guard.normal(read_as("два слова; a/b"), timeout=90),
                guard.bls("664", [IMAGE] * 9, timeout=90),
            )
        )

    geetest, image, bls = asyncio.run(solve())
    for solution in (geetest, image, bls):
        assert solution.raw == provider_answer(simulator, solution.task_id)
        assert solution.delivered_via != "callback" and solution.answer_fits is True
    assert image.raw == "два слова; a/b" and str((geetest.answer or {})["seccode"]).endswith(
        "|jordan"
    )


def read_as(text: str) -> bytes:
    """An image the simulator's OCR reads as ``text``."""
    return (SIM_TEXT_PREFIX + text.encode()).ljust(200, b"\x00")


def test_the_image_is_sent_to_the_provider_and_never_kept(
    client: Client, stack: LocalStack
) -> None:
    solution = client.normal(IMAGE, timeout=90)
    item = stack.ready.aws_client("dynamodb").get_item(
        TableName=stack.ready.tasks_table, Key={"task_id": {"S": solution.task_id}}
    )["Item"]
    assert base64.b64encode(IMAGE).decode()[:40] not in str(item)
    assert item["method"]["S"] == "base64"


@pytest.mark.parametrize("pingbacks", ["delivered", "dropped"])
def test_odd_answers_reach_a_2captcha_client_exactly_through_the_stacks_res_php(
    stack: LocalStack, simulator: Simulator, capsys: pytest.CaptureFixture[str], pingbacks: str
) -> None:
    """The stack's own in.php/res.php (json=1), as any 2captcha client reads it."""
    simulator.update_faults(pingback_drop_rate=1.0 if pingbacks == "dropped" else 0.0)
    key = issue_key(stack, capsys, WORKER.user_arn)
    task_ids = {}
    for answer in ODD_ANSWERS:
        image = base64.b64encode(read_as(answer)).decode()
        submitted = in_php(stack, key=key, method="base64", body=image, json="1").json()
        assert submitted["status"] == 1, submitted
        task_ids[answer] = str(submitted["request"])

    def answered(task_id: str) -> str | None:
        got = res_php(stack, key=key, action="get", id=task_id, json="1").json()
        return str(got["request"]) if got["status"] == 1 else None

    for answer, task_id in task_ids.items():
        assert wait_until(functools.partial(answered, task_id), timeout=90, interval=1) == answer
