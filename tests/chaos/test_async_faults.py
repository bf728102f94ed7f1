"""The chaos run's asynchronous faults, without a stack: which rule a worker applies when, and
the forwarder's target going down and up."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import pytest
import requests

from infra.chaos.async_faults import AsyncFaultRun, PingbackTarget
from infra.chaos.runner import ChaosRun
from infra.chaos.scenario import CI, DEMO, Scenario
from infra.local import LocalStack
from infra.local.runtime.faults import FaultRule


def first_firing(rules: list[FaultRule], function: str, service: str, operation: str) -> Any:
    """What a worker does: the first rule that fires for the call."""
    return next((r.mode for r in rules if r.fires_for(function, service, operation)), None)


@pytest.mark.parametrize("scenario", [DEMO, CI], ids=lambda s: s.name)
def test_the_poller_crashes_in_its_window_even_while_the_table_is_down(
    scenario: Scenario, tmp_path: Path
) -> None:
    faults = scenario.async_faults
    assert faults is not None
    run = ChaosRun(scenario, tmp_path)
    run._async = AsyncFaultRun(faults, cast(LocalStack, None), scenario.faults_end)
    window = faults.poller_failing
    assert window.start >= scenario.table_down.start  # the overlap this test is about

    # The run started window.start seconds ago: the rules' ends are read against the clock.
    rules = run._rules_active_at(window.start, time.time() - window.start)
    assert first_firing(rules, "PollerFunction", "dynamodb", "Query") == "crash"
    assert first_firing(rules, "ReplayFunction", "dynamodb", "UpdateItem") == "unavailable"
    consumer = first_firing(rules, "ResultConsumerFunction", "dynamodb", "UpdateItem")
    assert consumer in {"crash_after", "unavailable"}


def test_the_target_answers_503_while_down_and_keeps_what_it_got_while_up() -> None:
    target = PingbackTarget()
    target.start()
    try:
        assert requests.post(target.url, data={"id": "1", "code": "a"}, timeout=5).ok
        target.set_up(False)
        assert requests.get(f"{target.url}?id=2&code=b", timeout=5).status_code == 503
        target.set_up(True)
        assert requests.get(f"{target.url}?id=2&code=b", timeout=5).ok
    finally:
        target.stop()
    assert dict(target.received) == {"1": 1, "2": 1}
    assert target.refused == 1
