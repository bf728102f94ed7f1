"""`keys issue|list|revoke`: per-worker keys of the stack's in.php/res.php endpoint.

A key is printed once, when issued; the table keeps only its SHA-256 (the first 16 hex characters
name the record: the key id). Each key speaks for one owner, an IAM principal ARN: it submits
tasks as that principal and reads only that principal's tasks, as the IAM routes do. The owner is
stored as the stack counts principals (an assumed-role session or a role ARN with a path: the
role, without its path), and never the stack's AdminPrincipalArn: that key would read every
task, and a key travels in query strings.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import click
from botocore.exceptions import ClientError

from pingback_guard_cli.context import Context, api_url_option
from pingback_guard_cli.errors import CliFailure, ExitCode
from pingback_guard_cli.output import console, json_option, print_json, table
from pingback_guard_cli.stack import Aws, Stack

KEYS_OUTPUT = "WorkerKeysTableName"
KEY_ID_LENGTH = 16
# The userArn API Gateway hands the IAM routes: an IAM user, role or assumed-role session.
OWNER_PATTERN = re.compile(r"arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:[A-Za-z0-9+=,.@_/:-]{1,1900}")
# As the functions' domain/principals.py reads a principal (the CLI is installed without them):
# tests/cli/test_keys.py holds the two to the same answers.
ASSUMED_ROLE = re.compile(r"arn:(aws[a-z-]*):sts::([0-9]{12}):assumed-role/([^/]+)/[^/]+")
IAM_ROLE = re.compile(r"arn:(aws[a-z-]*):iam::([0-9]{12}):role/(?:[^/]+/)*([^/]+)")
LABEL_PATTERN = re.compile(r"[\w .@:/-]{0,64}")
# A key's capacity in threads (its tasks in flight at once: CaptchaAI sells plans by threads) and
# the client family it serves, which decides the "busy" answers its clients read. As the
# functions' domain/worker_keys.py reads them (DEFAULT_THREADS, MAX_THREADS, Dialect).
DEFAULT_THREADS = 10
MAX_THREADS = 1000
DIALECTS = ("captchaai", "2captcha")


@dataclass(frozen=True)
class KeyRecord:
    key_id: str
    owner: str
    label: str
    created_at: float
    revoked_at: float | None
    threads: int = DEFAULT_THREADS
    dialect: str = DIALECTS[0]


@dataclass(frozen=True)
class IssuedKey:
    key: str
    record: KeyRecord
    server: str


def owner_of(principal_arn: str) -> str:
    """Whose tasks a principal's are: a role for a role or any session of it (``arn:<partition>:
    iam::<account>:role/<name>``, no path); any other principal ARN as it is."""
    match = ASSUMED_ROLE.fullmatch(principal_arn) or IAM_ROLE.fullmatch(principal_arn)
    if match is None:
        return principal_arn
    partition, account, role = match.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"


def issue(
    aws: Aws,
    stack: Stack,
    given_owner: str,
    label: str,
    api_url: str | None = None,
    *,
    threads: int = DEFAULT_THREADS,
    dialect: str = DIALECTS[0],
) -> IssuedKey:
    """``api_url``: the API the key's clients reach (--api-url), else the stack's ApiUrl."""
    if not 1 <= threads <= MAX_THREADS:
        raise CliFailure(ExitCode.USAGE, f"--threads: a whole number from 1 to {MAX_THREADS}")
    if dialect not in DIALECTS:
        raise CliFailure(ExitCode.USAGE, f"--dialect must be one of {', '.join(DIALECTS)}")
    if not OWNER_PATTERN.fullmatch(given_owner):
        raise CliFailure(ExitCode.USAGE, "--owner must be an IAM principal ARN (arn:aws:iam::...)")
    if not LABEL_PATTERN.fullmatch(label):
        raise CliFailure(ExitCode.USAGE, "--label: at most 64 letters, digits, spaces or .@:/-")
    owner = _key_owner(stack, given_owner)
    key = secrets.token_hex(16)
    digest = hashlib.sha256(key.encode("ascii")).hexdigest()
    record = KeyRecord(
        digest[:KEY_ID_LENGTH], owner, label, time.time(), None, threads=threads, dialect=dialect
    )
    aws.client("dynamodb").put_item(
        TableName=stack.output(KEYS_OUTPUT),
        Item={
            "key_id": {"S": record.key_id},
            "digest": {"S": digest},
            "owner": {"S": owner},
            "label": {"S": label},
            "created_at": {"N": repr(record.created_at)},
            "threads": {"N": str(threads)},
            "dialect": {"S": dialect},
        },
        ConditionExpression="attribute_not_exists(key_id)",
    )
    return IssuedKey(key, record, urlsplit(stack.api_url(api_url)).netloc)


def _key_owner(stack: Stack, given_owner: str) -> str:
    owner = owner_of(given_owner)
    admin = stack.parameters.get("AdminPrincipalArn", "")
    if admin and owner_of(admin) == owner:
        raise CliFailure(
            ExitCode.USAGE,
            "--owner is the stack's AdminPrincipalArn: its key would read every task, and a key"
            " travels in query strings; issue keys for the workers' principals",
        )
    return owner


def list_keys(aws: Aws, stack: Stack) -> list[KeyRecord]:
    """Every key record (a Scan: the table holds one small item per issued key)."""
    pages = aws.client("dynamodb").get_paginator("scan")
    found = [
        _record(item)
        for page in pages.paginate(TableName=stack.output(KEYS_OUTPUT), ConsistentRead=True)
        for item in page.get("Items", [])
    ]
    return sorted(found, key=lambda record: record.created_at)


def revoke(aws: Aws, stack: Stack, key_id: str) -> KeyRecord:
    """From the next request on, the key gets ERROR_KEY_DOES_NOT_EXIST."""
    if not re.fullmatch(f"[0-9a-f]{{{KEY_ID_LENGTH}}}", key_id):
        raise CliFailure(ExitCode.USAGE, f"a key id is {KEY_ID_LENGTH} hex characters (keys list)")
    try:
        answer = aws.client("dynamodb").update_item(
            TableName=stack.output(KEYS_OUTPUT),
            Key={"key_id": {"S": key_id}},
            UpdateExpression="SET revoked_at = if_not_exists(revoked_at, :now)",
            ConditionExpression="attribute_exists(key_id)",
            ExpressionAttributeValues={":now": {"N": repr(time.time())}},
            ReturnValues="ALL_NEW",
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            raise CliFailure(ExitCode.NOT_FOUND, f"no key {key_id} in {stack.name}") from None
        raise
    return _record(answer["Attributes"])


def _record(item: dict[str, Any]) -> KeyRecord:
    revoked = item.get("revoked_at", {}).get("N")
    return KeyRecord(
        key_id=item["key_id"]["S"],
        owner=item.get("owner", {}).get("S", ""),
        label=item.get("label", {}).get("S", ""),
        created_at=float(item.get("created_at", {}).get("N", "0")),
        revoked_at=float(revoked) if revoked is not None else None,
        threads=int(item.get("threads", {}).get("N", DEFAULT_THREADS)),
        dialect=item.get("dialect", {}).get("S", DIALECTS[0]),
    )


def _when(epoch: float | None) -> str:
    return "-" if epoch is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


@click.group("keys")
def keys_group() -> None:
    """Per-worker keys of the stack's in.php/res.php (2captcha clients).

    A 2captcha client (2captcha-python, the JS/Go/PHP/Java/C# SDKs...) uses one as its API key
    and the API's host as its server. Only a hash of each key is stored.
    """


@keys_group.command("issue")
@click.option("--owner", required=True, help="IAM principal ARN the key speaks for.")
@click.option("--label", default="", help="A note for `keys list` (who or where it is used).")
@click.option(
    "--threads",
    type=int,
    default=DEFAULT_THREADS,
    show_default=True,
    help="The key's capacity: its tasks in flight at once (res.php threadsinfo reports it).",
)
@click.option(
    "--dialect",
    type=click.Choice(DIALECTS),
    default=DIALECTS[0],
    show_default=True,
    help="The client family the key serves: how it is told 'busy, try again'.",
)
@api_url_option
@json_option
@click.pass_obj
def keys_issue(
    context: Context,
    owner: str,
    label: str,
    threads: int,
    dialect: str,
    api_url: str | None,
    as_json: bool,
) -> None:
    """Issue a key for OWNER; it is printed once and never stored.

    The key submits tasks as OWNER and reads only OWNER's tasks, as the IAM routes do (a role
    for any session of it). Never for the stack's AdminPrincipalArn.
    """
    issued = issue(
        context.aws, context.stack, owner, label, api_url, threads=threads, dialect=dialect
    )
    if as_json:
        print_json({"key": issued.key, "server": issued.server, **asdict(issued.record)})
        return
    click.echo(f"key:    {issued.key}   (shown once: the stack keeps only its hash)")
    click.echo(f"key id: {issued.record.key_id}   (keys list / keys revoke)")
    click.echo(f"owner:  {issued.record.owner}")
    click.echo(f"threads: {issued.record.threads}   dialect: {issued.record.dialect}")
    click.echo(f"server: {issued.server}   (the 2captcha client's server / base URL)")


@keys_group.command("list")
@json_option
@click.pass_obj
def keys_list(context: Context, as_json: bool) -> None:
    """Every key's id, owner, label, when issued and when revoked (never a key)."""
    records = list_keys(context.aws, context.stack)
    if as_json:
        print_json([asdict(record) for record in records])
        return
    grid = table("key id", "owner", "label", "issued (UTC)", "revoked (UTC)", title="keys")
    for record in records:
        grid.add_row(
            record.key_id,
            record.owner,
            record.label,
            _when(record.created_at),
            _when(record.revoked_at),
        )
    console().print(grid if records else "no keys")


@keys_group.command("revoke")
@click.argument("key_id")
@json_option
@click.pass_obj
def keys_revoke(context: Context, key_id: str, as_json: bool) -> None:
    """Revoke the key KEY_ID: from the next request it gets ERROR_KEY_DOES_NOT_EXIST."""
    record = revoke(context.aws, context.stack, key_id)
    if as_json:
        print_json(asdict(record))
        return
    click.echo(f"revoked key {record.key_id} of {record.owner} at {_when(record.revoked_at)} UTC")
