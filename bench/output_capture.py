"""Capture what a handler writes to stdout: what Lambda would ship to CloudWatch Logs.

Captured at the file descriptor because Powertools' log handler keeps the stream it was given
at import time, so swapping `sys.stdout` alone would miss the JSON log lines.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

STDOUT_FD = 1


@dataclass
class CapturedOutput:
    text: str = ""

    @property
    def size_bytes(self) -> int:
        return len(self.text.encode("utf-8"))


@contextmanager
def captured_stdout() -> Iterator[CapturedOutput]:
    captured = CapturedOutput()
    sys.stdout.flush()
    saved = os.dup(STDOUT_FD)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), STDOUT_FD)
        try:
            yield captured
        finally:
            sys.stdout.flush()
            os.dup2(saved, STDOUT_FD)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", "replace")
