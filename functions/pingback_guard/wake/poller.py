"""PollerWaker interface and its Lambda implementation: one asynchronous invocation of the
poller function (``InvocationType=Event``, https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html),
by a submit (wake) or by the poller's main holder for a helper group (start_helper).

Lambda queues the event and answers 202 at once; the invocation runs later, out of this call.
A throttled or refused call is not retried here: the caller is a submit a worker waits on, and
the poller's schedule is the net.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import PollerWakeError
from pingback_guard.domain.lease import PollerStart

WAKE_EVENT = json.dumps({"source": PollerStart.WOKEN.value}).encode()
# Lambda's answer to an accepted asynchronous invocation.
ACCEPTED = 202


class PollerWaker(Protocol):
    def wake(self) -> None:
        """Start one poller invocation now; raises PollerWakeError when it was not accepted."""


class LambdaPollerWaker:
    def __init__(self, client: Any, function_name: str) -> None:
        """``client``: a Lambda client whose calls are bounded in time (aws_clients)."""
        self._client = client
        self._function_name = function_name

    def wake(self) -> None:
        self._invoke(WAKE_EVENT)

    def start_helper(self, group: int) -> None:
        self._invoke(json.dumps({"source": PollerStart.HELPER.value, "group": group}).encode())

    def _invoke(self, payload: bytes) -> None:
        try:
            answer = self._client.invoke(
                FunctionName=self._function_name, InvocationType="Event", Payload=payload
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "ClientError")
            raise PollerWakeError(f"Invoke refused: {code}") from None
        except BotoCoreError as error:
            raise PollerWakeError(f"Invoke failed: {type(error).__name__}") from None
        status = answer.get("StatusCode")
        if status != ACCEPTED:
            raise PollerWakeError(f"Invoke answered {status}, not {ACCEPTED}")
