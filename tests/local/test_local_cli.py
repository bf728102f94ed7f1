"""`python -m infra.local serve`: one ready line, then a clean stop on SIGTERM."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from infra.local.runtime.processes import read_first_line
from tests.local.support import FIXTURE_TEMPLATE, alive, descendant_pids
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(180)]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_serve_prints_one_ready_line_and_stops_everything_on_sigterm(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "infra.local",
        "serve",
        "--template",
        str(FIXTURE_TEMPLATE),
        "--time-scale",
        "60",
        "--provider-api-key",
        "cli-secret-key",
        "--parameter-overrides",
        "Flavour=cli",
        "--run-dir",
        str(tmp_path),
        "--warm-start",  # every worker running, so that SIGTERM has them all to stop
    ]
    process = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        ready = json.loads(read_first_line(process, 120, what="python -m infra.local"))
        for key in ("api_url", "aws_endpoint_url", "control_url", "tasks_table", "dlq_url"):
            assert ready[key], key
        assert ready["parking_queue_url"]
        assert ready["ApiUrl"] == ready["api_url"]
        assert "cli-secret-key" not in json.dumps(ready)
        assert Path(ready["functions"]["EchoFunction"]["log_file"]).parent == tmp_path / "logs"
        echo = requests.get(f"{ready['api_url']}/echo/cli", timeout=10).json()
        assert echo["environment"]["FLAVOUR"] == "cli"
        started = descendant_pids(process.pid)
        assert len(started) >= 9  # moto and two workers for each of the four functions
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert stdout == ""
    assert "cli-secret-key" not in stderr
    wait_until(lambda: not any(alive(pid) for pid in started), timeout=10)
    with pytest.raises(requests.ConnectionError):
        requests.get(ready["api_url"], timeout=5)
