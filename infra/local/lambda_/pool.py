"""Function workers as seen by the runtime: one process per concurrent invocation slot.

Like Lambda, a worker is a sandbox: its own process and environment, a cold start (handler
import) when it starts, one invocation at a time, and it is discarded when it exits or exceeds
the function's timeout mid-invocation (the invocation is then a function error, and the next one
on that slot is a cold start again).
"""

import contextlib
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from infra.local.lambda_.functions import FunctionSpec
from infra.local.lambda_.protocol import Channel, ChannelClosed
from infra.local.runtime.aws import FAKE_CREDENTIALS
from infra.local.runtime.calls import AwsCall, CallLog
from infra.local.runtime.faults import FaultRule
from infra.local.runtime.processes import PROJECT_ROOT, stop_process
from infra.local.runtime.stats import SharedStats

INIT_TIMEOUT_SECONDS = 60.0
_SLOT_WAIT_SECONDS = 0.5
_EXIT_WAIT_SECONDS = 2.0
_BOOTSTRAP = (
    "import sys; sys.path.append({root!r}); from infra.local.lambda_.worker import main; "
    "sys.path.remove({root!r}); main()"
)
_LAMBDA_PATH = "/usr/local/bin:/usr/bin:/bin"


class PoolClosed(RuntimeError):
    pass


@dataclass(frozen=True)
class Invocation:
    request_id: str
    result: Any = None
    error: dict[str, Any] | None = None
    duration_ms: float = 0.0
    cold_start: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "ok": self.ok,
            "result": self.result,
            "error": self.error,
            "duration_ms": round(self.duration_ms, 3),
            "cold_start": self.cold_start,
        }


def worker_environment(
    spec: FunctionSpec, aws_endpoint_url: str, region: str, overrides: Mapping[str, str]
) -> dict[str, str]:
    """The template's variables for this function, then what Lambda itself sets, for moto."""
    return {
        **spec.environment,
        **overrides,
        **FAKE_CREDENTIALS,
        "AWS_ENDPOINT_URL": aws_endpoint_url,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_LAMBDA_FUNCTION_NAME": spec.function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.function_name}",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{spec.runtime}",
        "LAMBDA_TASK_ROOT": str(spec.code_dir),
        "_HANDLER": spec.handler,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "PYTHONPATH": str(spec.code_dir),
        "PATH": _LAMBDA_PATH,
        "TZ": "UTC",
    }


class WorkerInitError(RuntimeError):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('errorType')}: {error.get('errorMessage')}")
        self.error = error


class WorkerProcess:
    """One sandbox process of a function."""

    def __init__(
        self,
        spec: FunctionSpec,
        environment: Mapping[str, str],
        log: IO[str],
        calls: CallLog,
        authorization: Mapping[str, Any] | None = None,
    ) -> None:
        self._spec = spec
        self._environment = environment
        self._authorization = authorization
        self._log = log
        self._calls = calls
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: Channel | None = None
        self._invoked = False

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, faults: Sequence[FaultRule]) -> None:
        """Start the process and wait for its cold start; WorkerInitError if the import fails."""
        parent_end, child_end = socket.socketpair()
        self._process = subprocess.Popen(  # noqa: S603 (our own interpreter and bootstrap)
            [
                sys.executable,
                "-u",
                "-c",
                _BOOTSTRAP.format(root=str(PROJECT_ROOT)),
                str(child_end.fileno()),
            ],
            env=dict(self._environment),
            cwd=self._spec.code_dir,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            pass_fds=(child_end.fileno(),),
            start_new_session=True,
        )
        child_end.close()
        self._channel = Channel(parent_end)
        self._channel.send(self._init_message(faults))
        try:
            reply = self._receive_until_reply(time.monotonic() + INIT_TIMEOUT_SECONDS)
        except TimeoutError:
            self.stop()
            raise WorkerInitError(_init_timeout_error()) from None
        if reply is None or reply["type"] != "ready":
            error = reply["error"] if reply else _exit_error("init", self._exit_status())
            self.stop()
            raise WorkerInitError(error)

    def invoke(self, event: Any, timeout_seconds: float) -> Invocation:
        assert self._channel is not None
        request_id = str(uuid.uuid4())
        cold_start, self._invoked = not self._invoked, True
        started = time.monotonic()
        invoke_message = {
            "type": "invoke",
            "request_id": request_id,
            "event": event,
            "deadline": time.time() + timeout_seconds,
        }
        try:
            self._channel.send(invoke_message)
            reply = self._receive_until_reply(started + timeout_seconds)
        except TimeoutError:
            self._kill()
            self._log_line(f"{request_id} Task timed out after {timeout_seconds:.2f} seconds")
            reply = {"type": "error", "error": _timeout_error(request_id, timeout_seconds)}
        except OSError:  # the worker died before it could read the invocation
            reply = None
        duration_ms = (time.monotonic() - started) * 1000
        if reply is None:
            reply = {"type": "error", "error": _exit_error(request_id, self._exit_status())}
        if reply["type"] == "result":
            return Invocation(request_id, reply["result"], None, duration_ms, cold_start)
        return Invocation(request_id, None, reply["error"], duration_ms, cold_start)

    def push_faults(self, faults: Sequence[FaultRule]) -> None:
        if self._channel is not None and self.alive:
            # OSError: the worker just exited; its replacement starts with the current rules.
            with contextlib.suppress(OSError):
                self._channel.send({"type": "faults", "rules": [rule.to_json() for rule in faults]})

    def stop(self) -> None:
        if self._channel is not None:
            with contextlib.suppress(OSError):
                self._channel.send({"type": "shutdown"})
        if self._process is not None:
            stop_process(self._process, grace_seconds=_EXIT_WAIT_SECONDS)
        if self._channel is not None:
            self._channel.close()

    def _init_message(self, faults: Sequence[FaultRule]) -> dict[str, Any]:
        spec = self._spec
        return {
            "type": "init",
            "function": spec.logical_id,
            "function_name": spec.function_name,
            "handler": spec.handler,
            "arn": spec.arn,
            "memory_mb": spec.memory_mb,
            "log_stream_name": f"local/{uuid.uuid4().hex}",
            "faults": [rule.to_json() for rule in faults],
            "authorization": self._authorization,
        }

    def _receive_until_reply(self, deadline: float) -> dict[str, Any] | None:
        """The next reply, call reports logged on the way; None if the worker exited."""
        assert self._channel is not None
        while True:
            try:
                message = self._channel.receive(timeout=max(0.0, deadline - time.monotonic()))
            except ChannelClosed:
                return None
            if message["type"] != "call":
                return message
            self._calls.record(AwsCall.from_json(message["call"]))

    def _exit_status(self) -> str:
        assert self._process is not None
        try:
            code = self._process.wait(timeout=_EXIT_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill()
            return "signal: killed"
        return f"exit status {code}" if code >= 0 else f"signal {-code}"

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def _log_line(self, text: str) -> None:
        self._log.write(f"{text}\n")
        self._log.flush()


def _timeout_error(request_id: str, timeout_seconds: float) -> dict[str, Any]:
    return {
        "errorType": "Sandbox.Timedout",
        "errorMessage": (
            f"RequestId: {request_id} Error: Task timed out after {timeout_seconds:.2f} seconds"
        ),
    }


def _init_timeout_error() -> dict[str, Any]:
    return {
        "errorType": "Runtime.InitTimeout",
        "errorMessage": f"the handler module did not load within {INIT_TIMEOUT_SECONDS:.0f}s",
    }


def _exit_error(request_id: str, status: str) -> dict[str, Any]:
    return {
        "errorType": "Runtime.ExitError",
        "errorMessage": f"RequestId: {request_id} Error: Runtime exited with error: {status}",
    }


@dataclass
class _Slot:
    process: WorkerProcess | None = None


@dataclass
class PoolStats(SharedStats):
    invocations: int = 0
    errors: int = 0
    cold_starts: int = 0
    discarded_workers: int = 0
    init_error: dict[str, Any] | None = None

    def count(self, invocation: Invocation, discarded: bool) -> None:
        self.add(
            invocations=1,
            errors=0 if invocation.ok else 1,
            cold_starts=1 if invocation.cold_start else 0,
            discarded_workers=1 if discarded else 0,
        )


class FunctionPool:
    """`size` worker slots of one function; invocations wait for a free slot."""

    def __init__(
        self,
        *,
        spec: FunctionSpec,
        environment: Mapping[str, str],
        size: int,
        log_path: Path,
        calls: CallLog,
        current_faults: Callable[[], Sequence[FaultRule]],
        authorization: Mapping[str, Any] | None = None,
    ) -> None:
        """`authorization`: {"profile": AuthorizationProfile JSON, "evaluator_url": ...} to
        authorize every AWS call the function makes (infra/local/iam); None: calls are not."""
        self.spec = spec
        self._environment = environment
        self._authorization = authorization
        self._calls = calls
        self._current_faults = current_faults
        self._log = log_path.open("a", encoding="utf-8", buffering=1)
        self._slots = [_Slot() for _ in range(size)]
        self._idle: queue.Queue[_Slot] = queue.Queue()
        self._closed = threading.Event()
        self._invoking = 0
        self._invoking_changed = threading.Condition()
        self.stats = PoolStats()

    def start(self, warm: bool) -> None:
        """``warm``: start every slot's worker now, in parallel (an import error is kept, not
        raised), as provisioned concurrency does. Otherwise a slot's worker starts at the slot's
        first invocation, as Lambda starts a sandbox (the invocation pays the cold start)."""
        if not warm:
            for slot in self._slots:
                self._idle.put(slot)
            return
        starters = [threading.Thread(target=self._start_slot, args=(slot,)) for slot in self._slots]
        for starter in starters:
            starter.start()
        for starter in starters:
            starter.join()

    def invoke(self, event: Any) -> Invocation:
        return self._invoke_on(self._take_slot(), event)

    def try_invoke(self, event: Any, wait_seconds: float) -> Invocation | None:
        """The invocation if a slot is free within `wait_seconds`; None: throttled (every worker
        busy), as Lambda answers an invocation over the function's concurrency."""
        if self._closed.is_set():
            raise PoolClosed(f"{self.spec.logical_id} is stopping")
        try:
            slot = self._idle.get(timeout=wait_seconds)
        except queue.Empty:
            return None
        return self._invoke_on(slot, event)

    def _invoke_on(self, slot: _Slot, event: Any) -> Invocation:
        with self._invoking_changed:
            self._invoking += 1
        invocation: Invocation | None = None
        try:
            process = self._ready_process(slot)
            invocation = process.invoke(event, self.spec.timeout_seconds)
        except WorkerInitError as failed:
            self.stats.init_error = failed.error
            invocation = Invocation(str(uuid.uuid4()), error=failed.error, cold_start=True)
        finally:
            discarded = slot.process is not None and not slot.process.alive
            if invocation is not None:
                self.stats.count(invocation, discarded)
            self._release(slot, discarded)
            with self._invoking_changed:
                self._invoking -= 1
                self._invoking_changed.notify_all()
        return invocation

    def push_faults(self, faults: Sequence[FaultRule]) -> None:
        for slot in self._slots:
            if slot.process is not None:
                slot.process.push_faults(faults)

    def stop(self) -> None:
        self._closed.set()
        stoppers = [
            threading.Thread(target=slot.process.stop)
            for slot in self._slots
            if slot.process is not None
        ]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        # An invocation whose worker was just stopped may still write its last line to the log.
        with self._invoking_changed:
            self._invoking_changed.wait_for(lambda: self._invoking == 0, _EXIT_WAIT_SECONDS)
        self._log.close()

    def _take_slot(self) -> _Slot:
        while not self._closed.is_set():
            try:
                return self._idle.get(timeout=_SLOT_WAIT_SECONDS)
            except queue.Empty:
                continue
        raise PoolClosed(f"{self.spec.logical_id} is stopping")

    def _ready_process(self, slot: _Slot) -> WorkerProcess:
        if slot.process is None or not slot.process.alive:
            slot.process = None
            process = WorkerProcess(
                self.spec, self._environment, self._log, self._calls, self._authorization
            )
            process.start(self._current_faults())
            slot.process = process
            if self._closed.is_set():
                process.stop()
                raise PoolClosed(f"{self.spec.logical_id} is stopping")
        return slot.process

    def _start_slot(self, slot: _Slot) -> None:
        try:
            self._ready_process(slot)
            self.stats.init_error = None
        except WorkerInitError as failed:
            self.stats.init_error = failed.error
        except PoolClosed:
            return
        self._idle.put(slot)

    def _release(self, slot: _Slot, discarded: bool) -> None:
        if discarded and not self._closed.is_set():
            threading.Thread(target=self._start_slot, args=(slot,), daemon=True).start()
        else:
            self._idle.put(slot)
