"""`secret rotate`: a new current callback secret; the old current one is kept as previous."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pingback_guard_cli.errors import CliFailure, ExitCode
from pingback_guard_cli.stack import Aws, Stack

SECRET_LENGTH = 40


@dataclass(frozen=True)
class Rotation:
    secret_arn: str
    version_id: str
    had_previous: bool
    """True when a previous secret was replaced (it is no longer accepted)."""


def rotate(aws: Aws, stack: Stack) -> Rotation:
    arn = stack.output("CallbackSecretArn")
    client = aws.client("secretsmanager")
    document = json.loads(client.get_secret_value(SecretId=arn)["SecretString"])
    if not isinstance(document, dict) or not document.get("current"):
        raise CliFailure(ExitCode.FAILED, "the callback secret has no `current` value to keep")
    new = client.get_random_password(
        PasswordLength=SECRET_LENGTH, ExcludePunctuation=True, RequireEachIncludedType=True
    )["RandomPassword"]
    had_previous = bool(document.get("previous"))
    # Other keys of the document are kept as they are.
    rotated = {**document, "current": new, "previous": document["current"]}
    answer = client.put_secret_value(SecretId=arn, SecretString=json.dumps(rotated))
    return Rotation(arn, str(answer["VersionId"]), had_previous)
