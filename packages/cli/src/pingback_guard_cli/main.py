"""pingback-guard: the operator's view of one stack (deployed, or local via --endpoint-url).

Each command group lives in its own module and is added to `cli` at the bottom of this file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import boto3
import click
from rich.text import Text

from pingback_guard_cli import keys, preflight, queues, secret, smoke, status, tasks
from pingback_guard_cli.context import Context, api_url_option
from pingback_guard_cli.errors import ExitCode, failure_of
from pingback_guard_cli.output import (
    cell,
    console,
    duration,
    json_option,
    print_json,
    table,
    when,
)
from pingback_guard_cli.stack import Aws

DEFAULT_STACK = "pingback-guard-dev"
EXIT_CODES = (
    "Exit codes: 0 ok; 1 failed or refused; 2 usage; 3 stack not found; 4 no credentials;"
    " 5 missing permission; 6 task not found; 7 endpoint unreachable; 8 the command worked and"
    " found something that needs attention (status, preflight)."
)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES,
)
@click.version_option(version("pingback-guard-cli"), "--version", prog_name="pingback-guard")
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

    Every command takes --json (the same fields as its table, for scripts).
    """
    session = ctx.obj if isinstance(ctx.obj, boto3.Session) else None
    if session is None:
        session = boto3.Session(profile_name=profile, region_name=region)
    ctx.obj = Context(Aws(session, endpoint_url), stack_name)


@cli.command("status")
@json_option
@click.pass_obj
def status_command(context: Context, as_json: bool) -> None:
    """Queues, alarms, pipe, PENDING/due tasks, last hour; exit 8 when something needs attention.

    Depth, in-flight count and oldest-message age of the dead-letter and parking queues, alarms
    in ALARM, the result events pipe's state, PENDING and due counts from the due index (Query,
    never Scan) and the last hour's recovered/expired/conflict/503 counts from CloudWatch. Needs
    attention: an alarm in ALARM, a message waiting in either queue, or the pipe stopped or
    failed.
    """
    found = status.read_status(context.aws, context.stack)
    if as_json:
        print_json(found.to_json())
    else:
        _print_status(found)
    if not found.healthy:
        raise click.exceptions.Exit(int(ExitCode.NEEDS_ATTENTION))


def _print_status(found: status.Status) -> None:
    out = console()
    verdict = "[green]healthy[/]" if found.healthy else "[red]needs attention[/]"
    out.print(f"stack [bold]{found.stack}[/]: {verdict}")
    for reason in found.attention:
        out.print(f"  - {reason}")
    queue_table = table(
        "queue", "visible", "in flight", "oldest message", title="queues",
        numeric=("visible", "in flight", "oldest message"),
    )  # fmt: skip
    for queue in found.queues:
        queue_table.add_row(
            queue.name,
            _warn(queue.visible),
            cell(queue.in_flight),
            _age(queue.oldest_age_seconds, queue.visible),
        )
    out.print(queue_table)
    due_table = table("PENDING", "due now", title="due index", numeric=("PENDING", "due now"))
    due_table.add_row(cell(found.pending), cell(found.due))
    out.print(due_table)
    hour = table(*found.last_hour, title="last hour (CloudWatch)", numeric=tuple(found.last_hour))
    hour.add_row(*(_count(value) for value in found.last_hour.values()))
    out.print(hour)
    pipe = found.pipe_state or "no data"
    out.print(f"result events pipe: {pipe}")
    alarms = ", ".join(found.alarms_in_alarm) or "none"
    out.print(f"alarms in ALARM: {'[red]' + alarms + '[/]' if found.alarms_in_alarm else alarms}")
    for note in found.notes:
        out.print(f"[dim]note: {note}[/]")


@cli.group("task")
def task_group() -> None:
    """One task's record."""


@task_group.command("show")
@click.argument("task_id")
@click.option(
    "--show-token",
    is_flag=True,
    help="Print the token and the pingback URL whole (credentials: take care).",
)
@json_option
@click.pass_obj
def task_show(context: Context, task_id: str, show_token: bool, as_json: bool) -> None:
    """The task as the table holds it (token and pingback URL hidden).

    Times are shown in UTC with how long ago (or how far ahead) they are; with --json they stay
    epoch seconds. With --show-token the secret values are printed whole, each on its own line
    below the table, never cut to the terminal's width.
    """
    record = tasks.task_record(context.aws, context.stack, task_id, show_token)
    if as_json:
        print_json(record)
        return
    now = time.time()
    grid = table("attribute", "value", title=f"task {task_id}")
    shown_below = {}
    for name, value in record.items():
        if show_token and name in tasks.SECRET_ATTRIBUTES and isinstance(value, str):
            shown_below[name] = value
            grid.add_row(name, Text(f"{len(value)} characters, printed whole below"))
        elif isinstance(value, int | float) and tasks.is_moment(name):
            grid.add_row(name, Text(when(value, now)))
        else:
            grid.add_row(name, cell(value))
    console().print(grid)
    for name, value in shown_below.items():
        click.echo(f"{name}: {value}")


@cli.group("dlq")
def dlq_group() -> None:
    """The dead-letter queue.

    Results the table did not take; ReplayFunction drains it.
    """


_PEEK_EFFECT = (
    "A peek receives each message it shows and makes it visible again at once: that receive adds 1"
    " to the message's receive count, and at the queue's MaxReceiveCount SQS moves the message on"
    " (dead-letter -> parking queue). Nothing is deleted. Messages in flight (being replayed, or"
    " received by another peek) cannot be read until their visibility timeout ends; they are"
    " counted, not shown. Tokens are never shown."
)


@dlq_group.command("peek", epilog=_PEEK_EFFECT)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@json_option
@click.pass_obj
def dlq_peek(context: Context, limit: int, as_json: bool) -> None:
    """Show waiting messages; each peek counts as one receive (see below)."""
    url = context.stack.output("DeadLetterQueueUrl")
    _print_peek("dead-letter", queues.peek(context.aws, url, limit), as_json)


@cli.group("parking")
def parking_group() -> None:
    """The parking queue.

    Dead letters that failed MaxReceiveCount replays; alarmed, redriven by hand.
    """


@parking_group.command("peek", epilog=_PEEK_EFFECT)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@json_option
@click.pass_obj
def parking_peek(context: Context, limit: int, as_json: bool) -> None:
    """Show parked messages; each peek counts as one receive (see below)."""
    url = context.stack.output("ParkingQueueUrl")
    _print_peek("parking", queues.peek(context.aws, url, limit), as_json)


@parking_group.command("redrive")
@click.option("--per-second", default=10, show_default=True, type=click.IntRange(1, 500))
@json_option
@click.pass_obj
def parking_redrive(context: Context, per_second: int, as_json: bool) -> None:
    """Move parked messages back to the dead-letter queue.

    Replay takes them again. On AWS an SQS message move task; where the endpoint lacks
    StartMessageMoveTask (moto) a receive/send/delete move, and it says so.
    """
    stack = context.stack
    done = queues.redrive(
        context.aws, stack.output("ParkingQueueUrl"), stack.output("DeadLetterQueueUrl"), per_second
    )
    if as_json:
        print_json(done.to_json())
    elif done.method == "message-move-task":
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
@json_option
@click.pass_obj
def parking_purge(context: Context, yes: bool, as_json: bool) -> None:
    """Delete every parked message (asks first).

    Their results are lost unless the poller recovers them from res.php.
    """
    url = context.stack.output("ParkingQueueUrl")
    if not yes:
        click.confirm(
            f"Purge every message of the parking queue of {context.stack_name}?", abort=True
        )
    held = queues.purge(context.aws, url)
    if as_json:
        print_json({"purged": True, "messages_held": held})
    else:
        click.echo(f"purged the parking queue ({held} message(s) held)")


@cli.group("secret", epilog=f"The retirement rule: {secret.RETIREMENT_RULE}.")
def secret_group() -> None:
    """The callback secret (current and previous, both accepted)."""


@secret_group.command("rotate")
@click.option(
    "--force",
    is_flag=True,
    help="Rotate even though a previous secret is still accepted: it is dropped at once.",
)
@json_option
@click.pass_obj
def secret_rotate(context: Context, force: bool, as_json: bool) -> None:
    """New current secret, old current kept as previous (still accepted). Prints no secret.

    Refused while a previous secret is set (rotating would drop it), unless --force.
    """
    done = secret.rotate(context.aws, context.stack, force)
    if as_json:
        print_json(done.to_json())
        return
    retire = f" (after {when(done.retire_after, time.time())})" if done.retire_after else ""
    click.echo(
        f"rotated the callback secret: new version {done.version_id}; the old current secret is "
        f"now previous and still accepted. Then {secret.RETIREMENT_RULE}{retire}: "
        "pingback-guard secret retire."
    )


@secret_group.command("retire")
@click.option("--force", is_flag=True, help="Retire now, before the rule allows (a leaked secret).")
@json_option
@click.pass_obj
def secret_retire(context: Context, force: bool, as_json: bool) -> None:
    """Stop accepting the previous secret. Prints no secret.

    Refused before the retirement rule allows it, unless --force.
    """
    retired = secret.retire(context.aws, context.stack, force)
    if as_json:
        print_json({"retired": retired})
    elif retired:
        click.echo(
            "retired the previous callback secret: pingback URLs made under it now get 403 "
            f"(within {secret.SECRET_CACHE_SECONDS} s, the functions' secret cache)"
        )
    else:
        click.echo("no previous secret to retire")


def _print_peek(queue_name: str, found: queues.Peek, as_json: bool) -> None:
    if as_json:
        print_json({"queue": queue_name, **found.to_json()})
        return
    out = console()
    now = time.time()
    if found.messages:
        grid = table(
            "message id", "receives", "sent", "kind", "task id", "reason",
            title=f"{queue_name} queue: messages (receive counts include this peek)",
            numeric=("receives",),
        )  # fmt: skip
        for message in found.messages:
            grid.add_row(
                cell(message.message_id),
                cell(message.receive_count),
                Text(when(message.sent_at, now)) if message.sent_at else cell(None),
                cell(message.fields.get("kind")),
                cell(message.fields.get("task_id")),
                cell(message.fields.get("reason")),
            )
        out.print(grid)
    else:
        out.print(f"{queue_name} queue: no visible message to show")
    limit = found.max_receive_count
    moved_at = f"; moved on at {limit} receives" if limit else ""
    out.print(
        f"{len(found.messages)} shown of {found.visible} visible; {found.in_flight} in flight"
        f" (being replayed or received by another reader: not readable now){moved_at}."
        " This peek added 1 to the receive count of each message shown."
    )


def _warn(value: int) -> Text:
    shown = cell(value)
    if value:
        shown.stylize("red")
    return shown


def _count(value: float | None) -> Text:
    return Text("no data", justify="right") if value is None else _warn(int(value))


def _age(seconds: float | None, visible: int) -> Text:
    if seconds is not None:
        return Text(duration(seconds), justify="right")
    return Text("no data" if visible else "-", justify="right")


@cli.command("preflight")
@click.option(
    "--template",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default="template.yaml",
    show_default=True,
    help="The stack's template (its parameter defaults).",
)
@click.option(
    "--config-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default="samconfig.toml",
    show_default=True,
    help="SAM config whose deploy parameter_overrides apply (skipped when absent).",
)
@click.option("--config-env", default="default", show_default=True, help="Its environment.")
@click.option(
    "--parameter",
    "-p",
    "parameters",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter override, as `sam deploy --parameter-overrides` takes (repeatable).",
)
@click.option(
    "--smoke/--no-smoke",
    default=True,
    show_default=True,
    help="A smoke check follows the deploy (it needs AdminPrincipalArn).",
)
@click.option(
    "--worker-principal",
    "worker_principals",
    multiple=True,
    metavar="ARN",
    help="An IAM user or role of the workers whose $connect grant is simulated (repeatable).",
)
@json_option
@click.pass_context
def preflight_command(
    ctx: click.Context,
    template: Path,
    config_file: Path,
    config_env: str,
    parameters: tuple[str, ...],
    smoke: bool,
    worker_principals: tuple[str, ...],
    as_json: bool,
) -> None:
    """Before a first deploy: what `sam deploy` would trip on, and what to change.

    Reads the account's Lambda concurrency limit, the Powertools layer's SSM parameter in the
    target region, the provider API key's SSM SecureString, the alarm e-mail, the API Gateway
    CloudWatch role (when the push stage logs), what a failed first deploy left (the stack, a
    retained tasks table), AdminPrincipalArn (with --smoke) and each --worker-principal's
    $connect grant. The stack is samconfig.toml's stack_name for the config env, unless
    --stack-name is given. Exit 8 when something must change first. Needs
    lambda:GetAccountSettings, ssm:GetParameter, apigateway:GET, cloudformation:DescribeStacks
    and DescribeStackResource, dynamodb:ListTables, iam:GetRole/GetUser and
    iam:SimulatePrincipalPolicy; a check whose permission is missing says "could not check".
    """
    context: Context = ctx.obj
    values = preflight.deploy_parameters(template, config_file, config_env, parameters)
    region = context.aws.session.region_name or "(no region)"
    plan = preflight.Plan(
        _deploy_stack_name(ctx, config_file, config_env), smoke, worker_principals
    )
    checks = preflight.run_checks(context.aws, values, region, plan)
    if as_json:
        print_json({"region": region, "stack": plan.stack_name, **preflight.to_json(checks)})
    else:
        grid = table("check", "ok", "found", "change", title=f"preflight in {region}")
        for check in checks:
            grid.add_row(check.name, _verdict(check), check.found, check.fix or "-")
        console().print(grid)
    if not all(check.ok for check in checks):
        raise click.exceptions.Exit(int(ExitCode.NEEDS_ATTENTION))


def _verdict(check: preflight.Check) -> Text:
    if not check.checked:
        return Text("not checked", style="yellow")
    return Text("ok", style="green") if check.ok else Text("CHANGE", style="red")


def _deploy_stack_name(ctx: click.Context, config_file: Path, config_env: str) -> str:
    """--stack-name when given, else the stack samconfig.toml deploys, else the default."""
    context: Context = ctx.obj
    group = ctx.parent
    given = group is not None and group.get_parameter_source("stack_name") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    )
    if given:
        return context.stack_name
    return preflight.samconfig_stack_name(config_file, config_env) or context.stack_name


@cli.command("smoke")
@api_url_option
@click.option(
    "--event-timeout",
    type=click.FloatRange(1, 900),
    default=60,
    show_default=True,
    help="Seconds to wait for the result event on the bus.",
)
@click.option(
    "--rule-settle-seconds",
    type=click.FloatRange(0, 120),
    default=10,
    show_default=True,
    help="Seconds between creating the temporary bus rule and the pingback (EventBridge needs"
    " a moment before a new rule matches).",
)
@json_option
@click.pass_obj
def smoke_command(
    context: Context,
    api_url: str | None,
    event_timeout: float,
    rule_settle_seconds: float,
    as_json: bool,
) -> None:
    """After a deploy: prove the stack end to end, without spending provider credit.

    As the stack's AdminPrincipalArn: a synthetic task (never sent to the provider) gets its
    pingback URL, a forged pingback gets 403 and the real one 200, GET reads the result back,
    its result event arrives on the bus (a temporary rule and queue), and the alarms are listed.
    Everything it created is deleted, also after a failure. Exit 1 when a step failed (one line
    each). Needs execute-api:Invoke on POST/smoke-tasks, DELETE/smoke-tasks/* and GET/tasks/*,
    events:PutRule/PutTargets/RemoveTargets/DeleteRule on the result bus, sqs:CreateQueue,
    SetQueueAttributes, GetQueueAttributes, ReceiveMessage, DeleteQueue, and
    cloudwatch:DescribeAlarms.
    """
    stack = context.stack
    options = smoke.SmokeOptions(stack.api_url(api_url), event_timeout, rule_settle_seconds)
    found = smoke.run_smoke(context.aws, stack, options)
    if as_json:
        print_json({"stack": stack.name, **found.to_json()})
    else:
        _print_smoke(stack.name, found)
    if not found.ok:
        raise click.exceptions.Exit(int(ExitCode.FAILED))


def _print_smoke(stack_name: str, found: smoke.Report) -> None:
    out = console()
    grid = table("step", "ok", "detail", title=f"smoke check of {stack_name}")
    for step in found.steps:
        verdict = Text("ok", style="green") if step.ok else Text("FAILED", style="red")
        grid.add_row(step.name, verdict, step.detail)
    out.print(grid)
    if found.alarms:
        alarms = table("alarm", "state", title="alarms")
        for name, state in found.alarms:
            alarms.add_row(name, Text(state, style="red") if state == "ALARM" else Text(state))
        out.print(alarms)
    out.print("smoke check " + ("[green]passed[/]" if found.ok else "[red]failed[/]"))


# Command groups defined in their own modules.
cli.add_command(keys.keys_group)


def run(argv: Sequence[str] | None = None, session: boto3.Session | None = None) -> int:
    """The console script; `session` lets tests give their own boto3 session."""
    try:
        # Not standalone: click returns the code a command exits with (status's 8, --version's 0).
        exited = cli.main(
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
    return exited if isinstance(exited, int) else int(ExitCode.OK)
