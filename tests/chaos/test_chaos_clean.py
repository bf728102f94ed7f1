"""A chaos run without any fault (no outage, no crash, no provider fault) raises no alarm."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.chaos.report import write_report
from infra.chaos.runner import ChaosRun
from infra.chaos.scenario import CLEAN

pytestmark = [pytest.mark.chaos, pytest.mark.local_stack, pytest.mark.timeout(600)]


def test_clean_run_raises_no_alarm(tmp_path: Path) -> None:
    result = ChaosRun(CLEAN, tmp_path, with_baseline=False, progress=lambda line: None).run()
    print("\n" + write_report(result, tmp_path))
    assert result.verdict.lost == []
    assert result.alarms is not None
    assert result.alarms.fired_in_clean_run == []
    assert result.alarms.intervals == {}
    assert result.passed
