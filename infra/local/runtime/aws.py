"""boto3 clients of the runtime itself (deployer, SQS pollers), pointed at the moto server."""

import threading
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

ACCOUNT_ID = "123456789012"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@dataclass(frozen=True)
class LocalPrincipal:
    """A caller the local gateway recognises by its SigV4 access key (IAM-authorised routes)."""

    access_key: str
    secret_key: str
    session_token: str | None
    user_arn: str
    user_id: str


WORKER = LocalPrincipal(
    access_key=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
    secret_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
    user_arn=f"arn:aws:iam::{ACCOUNT_ID}:user/local",
    user_id="AIDALOCALWORKER000001",
)
OTHER_WORKER = LocalPrincipal(
    access_key="testing-other",
    secret_key="testing-other-secret",  # noqa: S106 (a fake local credential)
    session_token=None,
    user_arn=f"arn:aws:iam::{ACCOUNT_ID}:user/local-other",
    user_id="AIDALOCALOTHER0000002",
)
"""A second caller, for tests of what one principal may see of another's tasks."""
LOCAL_PRINCIPALS = {principal.access_key: principal for principal in (WORKER, OTHER_WORKER)}
_CLIENT_CONFIG = Config(retries={"max_attempts": 3, "mode": "standard"}, max_pool_connections=32)
# One session per region for every client the runtime and its tests make: a session's loader
# keeps the service models it has read, so a new client costs milliseconds instead of a parse
# of botocore's JSON models (a stack start makes about 80). The lock because creating boto3
# clients from one session is not thread safe.
_SESSIONS: dict[str, boto3.Session] = {}
_SESSIONS_LOCK = threading.Lock()


@dataclass(frozen=True)
class AwsEndpoint:
    """Where moto listens and which region the stack lives in."""

    url: str
    region: str

    def client(self, service: str) -> Any:
        """A new client of its own (its own connection pool)."""
        with _SESSIONS_LOCK:
            session = _SESSIONS.get(self.region)
            if session is None:
                session = _SESSIONS[self.region] = fake_session(self.region)
            return session.client(service, endpoint_url=self.url, config=_CLIENT_CONFIG)  # type: ignore[call-overload]


def fake_session(region: str) -> boto3.Session:
    """A boto3 session with the local (fake) credentials: what moto and the local stack take."""
    return boto3.Session(
        aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
        region_name=region,
    )
