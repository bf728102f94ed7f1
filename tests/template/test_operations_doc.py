"""docs/operations.md says what template.yaml deploys (issue 39, item 8): the least-privilege table
is the template's roles, the alarm list is the template's alarms, and the facts the page states
in prose (table policy, queue senders, key readers, route throttle) are the template's."""

from __future__ import annotations

import re
from typing import Any

from infra.sam.least_privilege import documented_table, least_privilege_table
from tests.template.conftest import ROOT, of_type

OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return OPERATIONS.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_least_privilege_table_is_the_template_s_roles(template: dict[str, Any]) -> None:
    assert documented_table(OPERATIONS) == least_privilege_table(template), (
        "regenerate it: python -m infra.sam.least_privilege --write"
    )


def _alarm_suffix(alarm_name: Any) -> str:
    text, variables = (alarm_name["Fn::Sub"], {})
    if isinstance(text, list):
        text, variables = text
    for name, value in variables.items():
        text = text.replace("${" + name + "}", str(value))
    return str(text).removeprefix("${AWS::StackName}-")


def test_the_alarm_list_names_every_alarm_of_the_template_and_no_other(
    resources: dict[str, Any],
) -> None:
    deployed = {
        _alarm_suffix(alarm["Properties"]["AlarmName"])
        for alarm in of_type(resources, "AWS::CloudWatch::Alarm").values()
    }
    first_column = re.findall(r"^\| ([^|]+) \|", _section("Alarms"), re.MULTILINE)
    documented = {
        name
        for cell in first_column
        for name in re.findall(r"`([A-Za-z0-9-]+)`", cell)
        if not name.endswith("Alarm") and name[0].isalpha() and "-" in name
    }
    assert len(deployed) > 50
    assert documented == deployed


def test_the_tasks_table_policy_stated_is_the_template_s(resources: dict[str, Any]) -> None:
    (stated,) = re.findall(r"^\| `TasksTable` \|.*?`DeletionPolicy: (\w+)`", OPERATIONS, re.M)
    assert stated == resources["TasksTable"]["DeletionPolicy"]


def test_the_dead_letter_senders_stated_are_the_queue_policy_s(resources: dict[str, Any]) -> None:
    statements = resources["DeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    (only,) = [s for s in statements if s.get("Sid") == "OnlyProducersSend"]
    senders = {
        arn["Fn::GetAtt"][0] for arn in only["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    }
    (sentence,) = re.findall(r"only (.*?) may send to `DeadLetterQueue`", OPERATIONS)
    assert set(re.findall(r"`(\w+Role)`", sentence)) == senders


def test_the_key_readers_stated_are_the_roles_that_read_the_parameter(
    resources: dict[str, Any],
) -> None:
    readers = {
        logical_id
        for logical_id, role in of_type(resources, "AWS::IAM::Role").items()
        for policy in role["Properties"].get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
        if "ssm:GetParameter" in str(statement["Action"])
    }
    (sentence,) = re.findall(r"add `kms:Decrypt` on it to (.*?)\.\n", OPERATIONS, re.S)
    assert len(readers) == 7
    assert set(re.findall(r"`(\w+Role)`", sentence)) == readers


def test_each_default_stated_in_prose_is_the_template_s(template: dict[str, Any]) -> None:
    stated = re.findall(r"`(\w+)`, default (\d+)", OPERATIONS)
    assert ("ApiThrottlingRateLimit", "200") in stated
    for name, value in stated:
        assert str(template["Parameters"][name]["Default"]) == value, name
