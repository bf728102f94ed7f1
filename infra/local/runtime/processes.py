"""Child-process helpers shared by the moto server handle and the function workers."""

import subprocess
import threading
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]


class ChildStartError(RuntimeError):
    """A child process did not come up (exited, or said nothing in time)."""


def read_first_line(process: subprocess.Popen[str], timeout: float, *, what: str) -> str:
    """The first stdout line of `process`, waiting at most `timeout` seconds for it."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not lines or not lines[0].strip():
        exit_code = process.poll()
        stop_process(process, grace_seconds=1.0)
        state = f"exited with {exit_code}" if exit_code is not None else "gave no answer"
        raise ChildStartError(f"{what} {state} within {timeout:.0f}s (see its log)")
    return lines[0]


def stop_process(
    process: subprocess.Popen[str] | subprocess.Popen[bytes], grace_seconds: float
) -> None:
    """Wait up to `grace_seconds` for a process asked to stop, then terminate, then kill it."""
    for signal_process in (None, process.terminate, process.kill):
        if signal_process is not None:
            signal_process()
        try:
            process.wait(timeout=grace_seconds)
            return
        except subprocess.TimeoutExpired:
            continue
