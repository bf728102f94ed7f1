"""`python -m infra.local up` (`make up`): the simulator and the stack, and the lines a worker
needs; the provider key only through the environment; everything stops on SIGTERM."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from infra.local.runtime.processes import read_first_line
from tests.local.support import alive, descendant_pids

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(240)]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UP = [sys.executable, "-m", "infra.local", "up"]


def found(pattern: str, text: str) -> tuple[str, ...]:
    match = re.search(pattern, text)
    assert match is not None, f"{pattern} not in the printed lines"
    return match.groups()


def test_up_prints_what_a_worker_needs_and_its_key_works(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*UP, "--time-scale", "30", "--run-dir", str(tmp_path)],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    started: set[int] = set()
    try:
        first = read_first_line(process, 180, what="python -m infra.local up")
        assert process.stdout is not None
        printed = first + "".join(process.stdout.readline() for _ in range(9))
        started = descendant_pids(process.pid)
        key, server = found(r"key=([0-9a-f]{32}) server=(127\.0\.0\.1:\d+)", printed)
        (ca_bundle,) = found(r"REQUESTS_CA_BUNDLE=(\S+)", printed)
        assert "AWS_ACCESS_KEY_ID=testing" in printed and "AWS_REGION=us-east-1" in printed
        assert re.search(r"API_URL=http://127\.0\.0\.1:\d+", printed)
        balance = requests.get(
            f"https://{server}/res.php",
            params={"key": key, "action": "getbalance"},
            verify=ca_bundle,
            timeout=30,
        )
        assert balance.status_code == 200 and float(balance.text) > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not [pid for pid in started if alive(pid)]


def test_a_real_provider_s_key_comes_only_from_the_environment(tmp_path: Path) -> None:
    finished = subprocess.run(
        [*UP, "--provider-url", "https://ocr.captchaai.com", "--run-dir", str(tmp_path)],
        cwd=PROJECT_ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 2
    assert "$CAPTCHAAI_API_KEY" in finished.stderr
