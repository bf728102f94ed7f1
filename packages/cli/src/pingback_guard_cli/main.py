"""pingback-guard: the operator's view of one stack (deployed, or local via --endpoint-url)."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import boto3
import click
from rich.console import Console
from rich.table import Table

from pingback_guard_cli import keys, queues, secret, status, tasks
from pingback_guard_cli.errors import ExitCode, failure_of
from pingback_guard_cli.stack import Aws, Stack, find_stack

DEFAULT_STACK = "pingback-guard-dev"


@dataclass
class Context:
    aws: Aws
    stack_name: str
    _stack: Stack | None = None

    @property
    def stack(self) -> Stack:
        if self._stack is None:
            self._stack = find_stack(self.aws, self.stack_name)
        return self._stack


def _console() -> Console:
    return Console(highlight=False, width=max(100, Console().width))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--stack-name",
    "-s",
    envvar="PINGBACK_GUARD_STACK",
    default=DEFAULT_STACK,
    show_default=True,
    help="CloudFormation stack of pingback-guard (env PINGBACK_GUARD_STACK).",
)
@click.option("--region", envvar="AWS_REGION", help="AWS region (default: your AWS config).")
@click.option("--profile", envvar="AWS_PROFILE", help="AWS profile (default chain if unset).")
@click.option(
    "--endpoint-url",
    envvar="AWS_ENDPOINT_URL",
    help="AWS endpoint, e.g. the local stack's moto server (env AWS_ENDPOINT_URL).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    stack_name: str,
    region: str | None,
    profile: str | None,
    endpoint_url: str | None,
) -> None:
    """Operate a pingback-guard stack: health, tasks, dead-letter and parking queues, secret.

    Exit codes: 0 ok, 1 failed, 2 usage, 3 stack not found, 4 no credentials,
    5 missing permission, 6 task not found, 7 endpoint unreachable.
    """
    session = ctx.obj if isinstance(ctx.obj, boto3.Session) else None
    if session is None:
        session = boto3.Session(profile_name=profile, region_name=region)
    ctx.obj = Context(Aws(session, endpoint_url), stack_name)


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_obj
def status_command(context: Context, as_json: bool) -> None:
    """Queues, alarms, PENDING/due tasks, last hour.

    Depth and oldest-message age of the dead-letter and parking queues, alarms in ALARM,
    PENDING and due counts from the due index (Query, never Scan) and the last hour's
    recovered/expired/conflict/503 counts from CloudWatch.
    """
    found = status.read_status(context.aws, context.stack)
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
        return
    console = _console()
    verdict = "[green]healthy[/]" if found.healthy else "[red]needs attention[/]"
    console.print(f"stack [bold]{found.stack}[/]: {verdict}")
    queue_table = Table("queue", "visible", "in flight", "oldest message", title="queues")
    for queue in found.queues:
        queue_table.add_row(
            queue.name,
            _warn(queue.visible),
            str(queue.in_flight),
            _age(queue.oldest_age_seconds),
        )
    console.print(queue_table)
    tasks_table = Table("PENDING", "due now", title="due index")
    tasks_table.add_row(str(found.pending), str(found.due))
    console.print(tasks_table)
    hour = Table(*found.last_hour, title="last hour (CloudWatch)")
    hour.add_row(*(_warn(int(value)) for value in found.last_hour.values()))
    console.print(hour)
    alarms = ", ".join(found.alarms_in_alarm) or "none"
    console.print(
        f"alarms in ALARM: {'[red]' + alarms + '[/]' if found.alarms_in_alarm else alarms}"
    )


@cli.group("task")
def task_group() -> None:
    """One task's record."""


@task_group.command("show")
@click.argument("task_id")
@click.option("--show-token", is_flag=True, help="Print the token (it is a credential: take care).")
@click.pass_obj
def task_show(context: Context, task_id: str, show_token: bool) -> None:
    """The task as the table holds it (token hidden).

    The token is shown only with --show-token.
    """
    record = tasks.task_record(context.aws, context.stack, task_id, show_token)
    table = Table("attribute", "value", title=f"task {task_id}")
    for name, value in record.items():
        table.add_row(name, _when(name, value))
    _console().print(table)


@cli.group("dlq")
def dlq_group() -> None:
    """The dead-letter queue.

    Results the table did not take; ReplayFunction drains it.
    """


@dlq_group.command("peek")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.pass_obj
def dlq_peek(context: Context, limit: int) -> None:
    """Show messages without consuming them.

    Tokens are never shown. A peek counts as a receive toward MaxReceiveCount.
    """
    _print_peek(queues.peek(context.aws, context.stack.output("DeadLetterQueueUrl"), limit))


@cli.group("parking")
def parking_group() -> None:
    """The parking queue.

    Dead letters that failed MaxReceiveCount replays; alarmed, redriven by hand.
    """


@parking_group.command("peek")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@click.pass_obj
def parking_peek(context: Context, limit: int) -> None:
    """Show parked messages without consuming them (tokens never shown)."""
    _print_peek(queues.peek(context.aws, context.stack.output("ParkingQueueUrl"), limit))


@parking_group.command("redrive")
@click.option("--per-second", default=10, show_default=True, type=click.IntRange(1, 500))
@click.pass_obj
def parking_redrive(context: Context, per_second: int) -> None:
    """Move parked messages back to the dead-letter queue.

    Replay takes them again. On AWS an SQS message move task; where the endpoint lacks
    StartMessageMoveTask (moto) a receive/send/delete move, and it says so.
    """
    stack = context.stack
    done = queues.redrive(
        context.aws, stack.output("ParkingQueueUrl"), stack.output("DeadLetterQueueUrl"), per_second
    )
    if done.method == "message-move-task":
        click.echo(
            f"SQS message move task started (handle {done.task_handle}); "
            "progress: aws sqs list-message-move-tasks"
        )
    else:
        click.echo(
            "this endpoint has no StartMessageMoveTask: moved "
            f"{done.moved} message(s) by receive/send/delete to the dead-letter queue"
        )


@parking_group.command("purge")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def parking_purge(context: Context, yes: bool) -> None:
    """Delete every parked message (asks first).

    Their results are lost unless the poller recovers them from res.php.
    """
    url = context.stack.output("ParkingQueueUrl")
    if not yes:
        click.confirm(
            f"Purge every message of the parking queue of {context.stack_name}?", abort=True
        )
    click.echo(f"purged the parking queue ({queues.purge(context.aws, url)} message(s) held)")


@cli.group("secret")
def secret_group() -> None:
    """The callback secret."""


@secret_group.command("rotate")
@click.pass_obj
def secret_rotate(context: Context) -> None:
    """New current secret, old one kept as previous.

    The callback accepts both until the previous one is retired. Prints no secret.
    """
    done = secret.rotate(context.aws, context.stack)
    replaced = " (the former previous one is no longer accepted)" if done.had_previous else ""
    click.echo(
        f"rotated the callback secret: new version {done.version_id}; the old current secret is "
        f"now previous and still accepted{replaced}. Retire it after RetentionSeconds + 5 min."
    )


cli.add_command(keys.keys_group)


def _print_peek(messages: list[queues.PeekedMessage]) -> None:
    table = Table("message id", "receives", "sent", "kind", "task id", "reason", title="messages")
    for message in messages:
        table.add_row(
            message.message_id,
            str(message.receive_count),
            _timestamp(message.sent_at),
            str(message.fields.get("kind", "")),
            str(message.fields.get("task_id", "")),
            str(message.fields.get("reason", "")),
        )
    _console().print(table if messages else "no messages")


def _warn(value: int) -> str:
    return f"[red]{value}[/]" if value else str(value)


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.0f} s"


def _timestamp(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _when(name: str, value: Any) -> str:
    if isinstance(value, int | float) and name.endswith(("_at", "_after", "_until")):
        ago = time.time() - value
        return f"{_timestamp(value)} UTC ({ago:+.0f} s ago)"
    return str(value)


def run(argv: Sequence[str] | None = None, session: boto3.Session | None = None) -> int:
    """The console script; `session` lets tests give their own boto3 session."""
    try:
        cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="pingback-guard",
            obj=session,
            standalone_mode=False,
        )
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return int(ExitCode.FAILED)
    except click.ClickException as error:
        error.show()
        return int(ExitCode.USAGE)
    except Exception as error:
        failure = failure_of(error)
        click.echo(f"error: {failure}", err=True)
        return int(failure.code)
    return int(ExitCode.OK)
