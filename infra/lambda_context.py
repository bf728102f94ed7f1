"""A Lambda context object with the fields Powertools and the handlers read."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class FakeLambdaContext:
    function_name: str = "pingback-guard-test"
    memory_limit_in_mb: int = 256
    timeout_seconds: float = 30.0
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return int((self.timeout_seconds - (time.monotonic() - self.started)) * 1000)
