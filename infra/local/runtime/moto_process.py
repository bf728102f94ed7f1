"""moto's server in a process of its own, and the handle the runtime keeps on it.

Run as `python -m infra.local.runtime.moto_process --port N`: binds 127.0.0.1, prints one JSON line
`{"port": ..., "cloudformation_types": [...]}` and serves until its stdin closes (so it also
ends when the runtime that started it dies). DynamoDB writes are made atomic per item first
(infra.moto_atomic): moto's threaded server would otherwise let two conditional writes both pass.
"""

import argparse
import json
import logging
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from werkzeug.serving import BaseWSGIServer, make_server

from infra.local.runtime.processes import PROJECT_ROOT, read_first_line, stop_process
from infra.moto_atomic import make_dynamodb_writes_atomic

_STARTUP_TIMEOUT_SECONDS = 60.0


def _serve(port: int) -> None:
    from moto.cloudformation.parsing import get_model_map
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )

    make_dynamodb_writes_atomic()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)
    ready = {"port": server.server_port, "cloudformation_types": sorted(get_model_map())}
    print(json.dumps(ready), flush=True)
    threading.Thread(target=_shutdown_when_stdin_closes, args=(server,), daemon=True).start()
    server.serve_forever()


def _shutdown_when_stdin_closes(server: BaseWSGIServer) -> None:
    sys.stdin.read()
    server.shutdown()


@dataclass(frozen=True)
class MotoEndpoint:
    url: str
    cloudformation_types: frozenset[str]


class MotoServer:
    """The moto server process: started on 127.0.0.1, its stderr in `log_path`."""

    def __init__(self, port: int, log_path: Path) -> None:
        self._port = port
        self._log_path = log_path
        self._process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    def start(self) -> MotoEndpoint:
        self._log = self._log_path.open("a", encoding="utf-8")
        self._process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [sys.executable, "-m", "infra.local.runtime.moto_process", "--port", str(self._port)],
            cwd=PROJECT_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        line = read_first_line(self._process, _STARTUP_TIMEOUT_SECONDS, what="moto server")
        ready = json.loads(line)
        return MotoEndpoint(
            url=f"http://127.0.0.1:{ready['port']}",
            cloudformation_types=frozenset(ready["cloudformation_types"]),
        )

    def stop(self) -> None:
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            stop_process(self._process, grace_seconds=5.0)
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m infra.local.runtime.moto_process")
    parser.add_argument("--port", type=int, default=0)
    _serve(parser.parse_args(argv).port)


if __name__ == "__main__":
    main()
