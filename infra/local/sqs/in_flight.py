"""A batch handed to an invocation stays invisible until the invocation returns.

On AWS a queue's visibility timeout is at least its function's timeout: Lambda refuses to create
or update the mapping otherwise (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html,
"Your function's timeout must be less than or equal to the queue's visibility timeout"). So a batch
is never received again while its invocation may still be running. The local stack divides the
visibility timeout by its time scale but runs functions in real time: the fixture's 60 s became
1 s against a 3 s function timeout, and a loaded CI machine saw a message the function had handled
received again by a second poller before the first invocation had deleted it.

While the invocation runs, the batch's visibility is renewed every half period with the runtime's
own client (a correction of the twin's clock, not a call the mapping makes on AWS, so it is not
authorized as the function's role). Once the invocation returns, the undeleted messages come back
after the scaled timeout, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

logger = logging.getLogger(__name__)


class KeptInvisible:
    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        messages: Sequence[Mapping[str, Any]],
        visibility_seconds: int,
    ) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._entries = [
            {
                "Id": str(index),
                "ReceiptHandle": message["ReceiptHandle"],
                "VisibilityTimeout": visibility_seconds,
            }
            for index, message in enumerate(messages)
        ]
        self._period = visibility_seconds / 2
        self._returned = threading.Event()
        self._thread = threading.Thread(target=self._renew, daemon=True)

    def __enter__(self) -> KeptInvisible:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._returned.set()
        self._thread.join()

    def _renew(self) -> None:
        while not self._returned.wait(self._period):
            try:
                self._sqs.change_message_visibility_batch(
                    QueueUrl=self._queue_url, Entries=self._entries
                )
            except (BotoCoreError, ClientError) as failure:
                logger.warning("%s: visibility not renewed: %s", self._queue_url, failure)
                return
