"""Issue 39: the twin authorizes every role AWS uses, so removing a grant a data path needs breaks
that path locally as it would on AWS. Each stack runs the project's template, translated by SAM
as always, with grants removed from the translated template (SAM makes the schedule's role and
the rules' Lambda permissions, so they exist only there):

- the replay role without ConsumeDeadLetterQueue: Lambda refuses to create the mapping, so the
  stack does not start (CloudFormation's create would fail the same way);
- the pipe role without PublishResults: a final result is never on the bus;
- the poll schedule's role without lambda:InvokeFunction: the poller is never invoked;
- the example consumer's rule permission removed: the rule's event reaches the other targets,
  never the consumer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from infra.local import LocalOptions, LocalStack
from infra.local.cloudformation.template import SamTemplate, TemplateError
from infra.project_template import TEMPLATE_PATH
from tests.local.support import child_pids
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.timeout(300)]

Resources = dict[str, Any]


def translated_without(edit: Callable[[Resources], None]) -> pytest.MonkeyPatch:
    """SAM's translation, then `edit` on its resources (undone when the patch is)."""
    translate = SamTemplate.translate
    patch = pytest.MonkeyPatch()

    def edited(template: SamTemplate, parameter_values: Any, region: str) -> dict[str, Any]:
        document = translate(template, parameter_values, region)
        edit(document["Resources"])
        return document

    patch.setattr(SamTemplate, "translate", edited)
    return patch


def drop_statement(resources: Resources, role: str, sid: str) -> None:
    statements = resources[role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    kept = [statement for statement in statements if statement.get("Sid") != sid]
    assert len(kept) == len(statements) - 1, f"{role} has no statement {sid}"
    statements[:] = kept


def drop_schedule_invoke_and_consumer_permission(resources: Resources) -> None:
    policies = resources["PollerFunctionPollScheduleRole"]["Properties"]["Policies"]
    kept = [p for p in policies if p["PolicyName"] != "PollerFunctionPollScheduleLambdaPolicy"]
    assert len(kept) == len(policies) - 1
    policies[:] = kept
    del resources["ResultConsumerFunctionFinalResultsPermission"]


def options(run_dir: Any) -> LocalOptions:
    return LocalOptions(
        template=TEMPLATE_PATH,
        provider_api_key="local-test-key",
        run_dir=run_dir,
        workers_per_function=1,
        time_scale=60,  # the poll schedule's rate(1 minute) fires every second
    )


def running(edit: Callable[[Resources], None], run_dir: Any) -> Iterator[LocalStack]:
    patch = translated_without(edit)
    try:
        with LocalStack(options(run_dir)) as stack:
            yield stack
    finally:
        patch.undo()


@pytest.fixture(scope="module")
def unscheduled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    yield from running(
        drop_schedule_invoke_and_consumer_permission, tmp_path_factory.mktemp("unscheduled")
    )


@pytest.fixture(scope="module")
def unpublished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    yield from running(
        lambda resources: drop_statement(resources, "ResultEventsPipeRole", "PublishResults"),
        tmp_path_factory.mktemp("unpublished"),
    )


def write_final_result(stack: LocalStack, task_id: str) -> None:
    """A registered task's first final result, as the product writes it (the pipe's filter)."""
    stack.ready.aws_client("dynamodb").put_item(
        TableName=stack.ready.tasks_table,
        Item={
            "task_id": {"S": task_id},
            "status": {"S": "SOLVED"},
            "submitted_at": {"N": "1764532790.5"},
            "solution": {"S": "local-token"},
            "delivered_via": {"S": "callback"},
        },
    )


def invocations(stack: LocalStack, function: str) -> int:
    return int(stack.health()["functions"][function]["invocations"])


def test_without_its_queue_grant_the_replay_mapping_refuses_the_stack(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    patch = translated_without(
        lambda resources: drop_statement(resources, "ReplayFunctionRole", "ConsumeDeadLetterQueue")
    )
    try:
        with pytest.raises(TemplateError) as refused:
            LocalStack(options(tmp_path_factory.mktemp("unpolled"))).start()
    finally:
        patch.undo()
    assert str(refused.value).startswith(
        'ReplayFunctionDeadLetters: Resource handler returned message: "Invalid request provided:'
        " The provided execution role does not have permissions to call ReceiveMessage on SQS"
    )
    wait_until(lambda: not child_pids(), timeout=10)  # the start cleaned up after itself


def test_a_schedule_whose_role_may_not_invoke_never_runs_the_poller(
    unscheduled: LocalStack,
) -> None:
    wait_until(
        lambda: unscheduled.health()["schedules_refused"]["PollerFunctionPollSchedule"] >= 2,
        timeout=60,
    )
    health = unscheduled.health()
    assert health["schedules"]["PollerFunctionPollSchedule"] >= 2
    assert invocations(unscheduled, "PollerFunction") == 0


def test_a_rule_target_without_its_permission_never_gets_the_event(
    unscheduled: LocalStack,
) -> None:
    write_final_result(unscheduled, "39001")
    wait_until(lambda: unscheduled.health()["event_bus"]["refused"] >= 1, timeout=60)
    wait_until(unscheduled.result_events_settled, timeout=60)
    (event,) = unscheduled.published_events()
    assert event["detail"]["task_id"] == "39001"
    assert invocations(unscheduled, "PushFunction") == 1  # its rule's permission is intact
    assert invocations(unscheduled, "ResultConsumerFunction") == 0
    assert unscheduled.health()["event_bus"]["retried"] == 0  # a refusal is never retried


def test_a_pipe_whose_role_may_not_put_never_publishes(unpublished: LocalStack) -> None:
    write_final_result(unpublished, "39002")
    wait_until(
        lambda: unpublished.health()["event_pipes"]["ResultEventsPipe"]["failed_executions"] >= 2,
        timeout=60,
    )
    assert unpublished.published_events() == []
    assert invocations(unpublished, "ResultConsumerFunction") == 0
