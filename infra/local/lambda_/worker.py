"""A function worker: one process per concurrent invocation slot, like a Lambda sandbox.

Started by the runtime with exactly the function's environment and a socket on the file
descriptor given as argv[1]. It installs the AWS call hooks, imports the handler once (the cold
start), then serves invocations one at a time until told to stop or until the runtime goes away.
"""

import importlib
import json
import os
import queue
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from infra.local.iam.authorizer import AuthorizationProfile, Authorizer
from infra.local.iam.evaluator import SidecarEvaluator
from infra.local.lambda_.protocol import Channel, ChannelClosed
from infra.local.runtime.aws_hooks import AwsCallHooks
from infra.local.runtime.calls import AwsCall
from infra.local.runtime.faults import FaultRule

Handler = Callable[[Any, Any], Any]


class LambdaContext:
    """The context object of the Python runtime, with the attributes handlers use."""

    def __init__(self, init: Mapping[str, Any], request_id: str, deadline: float) -> None:
        self.function_name: str = init["function_name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn: str = init["arn"]
        self.memory_limit_in_mb: int = int(init["memory_mb"])
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name: str = init["log_stream_name"]
        self.identity = None
        self.client_context = None
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def error_document(error: BaseException, error_type: str | None = None) -> dict[str, Any]:
    return {
        "errorMessage": str(error),
        "errorType": error_type or type(error).__name__,
        "stackTrace": traceback.format_tb(error.__traceback__),
    }


def _load_handler(handler: str) -> Handler:
    module_name, _, attribute = handler.rpartition(".")
    module = importlib.import_module(module_name)
    function = getattr(module, attribute)
    if not callable(function):
        raise TypeError(f"{handler} is not callable")
    return function  # type: ignore[no-any-return]


def _print_error(error: BaseException) -> None:
    print(f"[ERROR] {type(error).__name__}: {error}", file=sys.stderr)
    traceback.print_exception(error, file=sys.stderr)


def _invoke(
    channel: Channel,
    hooks: AwsCallHooks,
    handler: Handler,
    init: Mapping[str, Any],
    message: Mapping[str, Any],
) -> None:
    request_id = str(message["request_id"])
    context = LambdaContext(init, request_id, float(message["deadline"]))
    hooks.request_id = request_id
    started = time.monotonic()
    print(f"START RequestId: {request_id} Version: $LATEST")
    try:
        response = _run_handler(handler, message["event"], context)
    finally:
        hooks.request_id = None
        duration_ms = (time.monotonic() - started) * 1000
        print(f"END RequestId: {request_id}")
        print(f"REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms")
    channel.send({"request_id": request_id, **response})


def _run_handler(handler: Handler, event: Any, context: LambdaContext) -> dict[str, Any]:
    """The result message, or the error message Lambda would report."""
    try:
        result = handler(event, context)
    except Exception as error:
        _print_error(error)
        return {"type": "error", "error": error_document(error)}
    try:
        json.dumps(result)
    except (TypeError, ValueError) as error:
        return {"type": "error", "error": error_document(error, "Runtime.MarshalError")}
    return {"type": "result", "result": result}


def _read_messages(
    channel: Channel, hooks: AwsCallHooks, invocations: "queue.Queue[dict[str, Any] | None]"
) -> None:
    while True:
        try:
            message = channel.receive()
        except ChannelClosed:
            os._exit(0)  # the runtime is gone: nobody will read a result
        if message["type"] == "faults":
            hooks.set_rules(tuple(FaultRule.from_json(rule) for rule in message["rules"]))
        elif message["type"] == "invoke":
            invocations.put(message)
        else:
            invocations.put(None)
            return


def _authorizer(authorization: Mapping[str, Any] | None) -> Authorizer | None:
    """The function's role and the evaluator's URL, when the runtime authorizes calls."""
    if authorization is None:
        return None
    return Authorizer(
        AuthorizationProfile.from_json(authorization["profile"]),
        SidecarEvaluator(authorization["evaluator_url"]),
    )


def main() -> None:
    channel = Channel(socket.socket(fileno=int(sys.argv[1])))
    init = channel.receive()

    def report(call: AwsCall) -> None:
        channel.send({"type": "call", "call": call.to_json()})

    hooks = AwsCallHooks(init["function"], report, _authorizer(init.get("authorization")))
    hooks.set_rules(tuple(FaultRule.from_json(rule) for rule in init["faults"]))
    hooks.install()
    started = time.monotonic()
    try:
        handler = _load_handler(init["handler"])
    except Exception as error:
        _print_error(error)
        channel.send(
            {"type": "init_error", "error": error_document(error, "Runtime.ImportModuleError")}
        )
        return
    channel.send({"type": "ready", "init_ms": round((time.monotonic() - started) * 1000, 1)})
    invocations: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=_read_messages, args=(channel, hooks, invocations), daemon=True).start()
    while (message := invocations.get()) is not None:
        _invoke(channel, hooks, handler, init, message)
