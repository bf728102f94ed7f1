"""A scripted transport and a fake clock for the worker client's unit tests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pingback_guard_client import Client, RetryPolicy
from pingback_guard_client.transport import HttpAnswer, TransportFailure


@dataclass
class FakeClock:
    now: float = 1_000_000.0
    slept: list[float] = field(default_factory=list)

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class FakeTransport:
    """Answers from a script, one per request, and records the requests."""

    answers: list[HttpAnswer | TransportFailure]
    requests: list[tuple[str, str, Mapping[str, Any] | None]] = field(default_factory=list)
    closed: bool = False

    def request(self, method: str, path: str, body: Mapping[str, Any] | None) -> HttpAnswer:
        self.requests.append((method, path, body))
        answer = self.answers.pop(0)
        if isinstance(answer, TransportFailure):
            raise answer
        return answer

    def close(self) -> None:
        self.closed = True


def view(status: str = "PENDING", **fields: Any) -> HttpAnswer:
    return HttpAnswer(200, {"task_id": "42", "status": status, "poll_attempts": 0, **fields})


def solved(now: float, token: str = "03AGdBq2-token", **fields: Any) -> HttpAnswer:
    document = {
        "solution": token,
        "delivered_via": "callback",
        "submitted_at": now - 30,
        "finished_at_earliest": now - 5,
        "finished_at_latest": now - 2,
        "usable_until": now + 115,
        "usable": True,
        "token_age_seconds": 5,
    }
    return view("SOLVED", **{**document, **fields})


def client_with(*answers: HttpAnswer | TransportFailure) -> tuple[Client, FakeTransport, FakeClock]:
    """A sync Client on a scripted transport and a fake clock."""
    transport = FakeTransport(list(answers))
    clock = FakeClock()
    client = Client(
        "https://unused.example",
        region="us-east-1",
        transport=transport,
        retry=RetryPolicy(attempts=3, base_seconds=1, max_seconds=4),
        clock=clock.time,
        sleep=clock.sleep,
    )
    return client, transport, clock
