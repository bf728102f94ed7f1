"""Fixtures for the simulator tests: a running simulator and a pingback receiver, both stopped
after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from infra.simulator import Simulator, SimulatorConfig
from tests.simulator.simulator_helpers import FAST_CONFIG, PingbackReceiver, SimulatorClient


@pytest.fixture
def start_simulator() -> Iterator[Callable[..., SimulatorClient]]:
    """Starts a simulator with FAST_CONFIG plus overrides; stops it after the test."""
    running: list[Simulator] = []

    def start(**overrides: Any) -> SimulatorClient:
        simulator = Simulator(SimulatorConfig.from_mapping({**FAST_CONFIG, **overrides}))
        running.append(simulator)
        simulator.start()
        return SimulatorClient(simulator)

    yield start
    for simulator in running:
        simulator.stop()


@pytest.fixture
def receiver() -> Iterator[PingbackReceiver]:
    pingback_receiver = PingbackReceiver()
    yield pingback_receiver
    pingback_receiver.stop()
