"""boto3 clients of the runtime itself (deployer, SQS pollers), pointed at the moto server."""

import threading
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

ACCOUNT_ID = "123456789012"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}
_CLIENT_CONFIG = Config(retries={"max_attempts": 3, "mode": "standard"}, max_pool_connections=32)


@dataclass
class AwsEndpoint:
    """Where moto listens and which region the stack lives in."""

    url: str
    region: str
    _session_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def client(self, service: str) -> Any:
        """A new client; the lock because creating boto3 clients is not thread safe."""
        with self._session_lock:
            session = boto3.Session(
                aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
                region_name=self.region,
            )
            return session.client(service, endpoint_url=self.url, config=_CLIENT_CONFIG)  # type: ignore[call-overload]
