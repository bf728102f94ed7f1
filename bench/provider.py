"""The CaptchaAI simulator as the benchmarks need it: every task solved at once, no pingback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from infra.simulator import Faults, Simulator, SimulatorConfig, SolveTimeDistribution

API_KEY = "0123456789abcdef0123456789abcdef"
TYPICAL_TOKEN_BYTES = 2200


@contextmanager
def instant_simulator(token_bytes: int = TYPICAL_TOKEN_BYTES) -> Iterator[Simulator]:
    """Solved the moment it is submitted, kept an hour, and the pingback never arrives."""
    config = SimulatorConfig(
        api_key=API_KEY,
        seed=20260101,
        solve_time=SolveTimeDistribution(kind="uniform", min_seconds=0.0, max_seconds=0.0),
        unsolvable_rate=0.0,
        result_retention_seconds=3600.0,
        token_min_length=token_bytes,
        token_max_length=token_bytes,
        faults=Faults(pingback_drop_rate=1.0),
    )
    with Simulator(config) as simulator:
        yield simulator


def res_requests(simulator: Simulator) -> int:
    return simulator.stats()["res"]["requests"]
