"""Requests sessions that sign for the local gateway's IAM routes as a local principal.

The signer is the worker client's (pingback_guard_client.signing), with the local credentials
instead of the default chain: the harness runs without AWS credentials in its environment.
"""

import requests
from botocore.credentials import Credentials

from infra.local.runtime.aws import WORKER, LocalPrincipal
from pingback_guard_client.signing import signed_session


def credentials_of(principal: LocalPrincipal) -> Credentials:
    return Credentials(principal.access_key, principal.secret_key, principal.session_token)


def local_signed_session(
    region: str = "us-east-1", principal: LocalPrincipal = WORKER
) -> requests.Session:
    """A session whose requests the local gateway accepts as `principal`'s."""
    return signed_session(region, credentials_of(principal))
