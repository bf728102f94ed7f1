"""`make sam-local-events`: what `sam local invoke ... --env-vars env.json` needs to show a stored
result (docs/operations.md, "Local runs").

Against the moto server env.json names (AWS_ENDPOINT_URL), it creates the resources env.json
names (the table exactly as template.yaml declares it, the dead-letter queue, the callback secret,
the provider API key parameter) when they are missing, records two PENDING tasks the way
SubmitFunction does (the product's own store and capability mint, under the secret it finds), and
writes events/ with their ids and capabilities: pingbacks that a fresh CallbackFunction accepts,
then a GET, a replay batch and a report for the same tasks.

Run: `python -m infra.sam.local_events [--endpoint-url URL] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from infra.project_template import create_tasks_table, placeholder_environment
from infra.sam import make_events
from pingback_guard.data.dynamodb import DynamoDbTaskStore
from pingback_guard.domain.task import CaptchaRequest, NewTask, SubmissionOutcome
from pingback_guard.logic import capability
from pingback_guard.settings.submit import SubmitSettings

ENV_JSON = make_events.ROOT / "env.json"
# The endpoint env.json is written for; replaced everywhere by --endpoint-url.
ENV_JSON_ENDPOINT = "http://127.0.0.1:5000"
# The provider API key the local SSM parameter holds when it is missing (the simulator's own).
LOCAL_PROVIDER_API_KEY = "0123456789abcdef0123456789abcdef"
# Far enough ahead that the scheduled poller leaves the sample tasks to their pingbacks.
FIRST_POLL_AFTER_SECONDS = 3600


def sam_local_environment(function: str, endpoint_url: str | None = None) -> dict[str, str]:
    """A function's variables under `sam local invoke --env-vars env.json`: the template's
    (default parameters) overlaid by env.json's Parameters and its own section."""
    overrides = json.loads(ENV_JSON.read_text(encoding="utf-8"))
    environment = {
        **placeholder_environment(function),
        **overrides["Parameters"],
        **overrides.get(function, {}),
    }
    if endpoint_url:
        environment = {
            name: value.replace(ENV_JSON_ENDPOINT, endpoint_url)
            for name, value in environment.items()
        }
    return environment


def ensure_resources(submit: Mapping[str, str], callback: Mapping[str, str]) -> str:
    """Creates what env.json names, where missing; the callback secret's current value."""

    def client(service: str) -> Any:
        return _client(submit, service)

    dynamodb = client("dynamodb")
    if submit["TASKS_TABLE_NAME"] not in dynamodb.list_tables()["TableNames"]:
        create_tasks_table(dynamodb, submit["TASKS_TABLE_NAME"])
    client("sqs").create_queue(QueueName=callback["DEAD_LETTER_QUEUE_URL"].rsplit("/", 1)[-1])
    ssm = client("ssm")
    name = submit["PROVIDER_API_KEY_PARAMETER"]
    if not ssm.get_parameters(Names=[name])["Parameters"]:
        ssm.put_parameter(Name=name, Type="SecureString", Value=LOCAL_PROVIDER_API_KEY)
    secrets = client("secretsmanager")
    secret_id = callback["CALLBACK_SECRET_ID"]
    try:
        document = json.loads(secrets.get_secret_value(SecretId=secret_id)["SecretString"])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        document = {"current": make_events.SAMPLE_CALLBACK_SECRET, "previous": ""}
        secrets.create_secret(Name=secret_id, SecretString=json.dumps(document))
    return str(document["current"])


def record_sample_tasks(
    submit: Mapping[str, str], secret: str, now: float
) -> make_events.SampleTasks:
    """Two PENDING tasks as SubmitFunction records them, each with its own capability."""
    settings = SubmitSettings.from_env(submit)
    store = DynamoDbTaskStore(_client(submit, "dynamodb"), settings.table)
    # Provider-shaped ids (11 digits), new on every run so that reruns record new tasks.
    base = int(now * 10) % 10**10
    solved, failed = str(10**10 + base), str(2 * 10**10 + base)
    minted = {task_id: capability.mint(secret, now) for task_id in (solved, failed)}
    request = CaptchaRequest("userrecaptcha", dict(make_events.SAMPLE_REQUEST_FIELDS))
    for task_id, minted_for in minted.items():
        outcome = store.record_submission(
            NewTask(
                task_id,
                request,
                submitted_at=now,
                first_poll_at=now + FIRST_POLL_AFTER_SECONDS,
                nonce=minted_for.nonce,
                owner=make_events.SAMPLE_OWNER,
            )
        )
        if outcome is not SubmissionOutcome.CREATED:
            raise RuntimeError(f"task {task_id} was not recorded: {outcome}")
    return make_events.SampleTasks(
        solved_id=solved,
        solved_capability=minted[solved].token,
        failed_id=failed,
        failed_capability=minted[failed].token,
    )


def _client(environment: Mapping[str, str], service: str) -> Any:
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=environment["AWS_ENDPOINT_URL"],
        region_name=environment.get("AWS_REGION", make_events.REGION),
    )


def write_local_events(endpoint_url: str | None, out: Path, now: float | None = None) -> None:
    submit = sam_local_environment("SubmitFunction", endpoint_url)
    callback = sam_local_environment("CallbackFunction", endpoint_url)
    secret = ensure_resources(submit, callback)
    sample = record_sample_tasks(submit, secret, time.time() if now is None else now)
    for path, event in make_events.build(sample, invoke_dir=out).items():
        if path.parent == out:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(make_events.render(event), encoding="utf-8")
    print(
        f"recorded PENDING tasks {sample.solved_id} and {sample.failed_id} in"
        f" {submit['TASKS_TABLE_NAME']} ({submit['AWS_ENDPOINT_URL']}); wrote {out}/*.json"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--endpoint-url", help=f"the moto server (default: env.json's, {ENV_JSON_ENDPOINT})"
    )
    parser.add_argument("--out", type=Path, default=make_events.INVOKE_DIR)
    arguments = parser.parse_args(argv)
    write_local_events(arguments.endpoint_url, arguments.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
