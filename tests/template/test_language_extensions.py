"""The one template loader applies AWS::LanguageExtensions as CloudFormation does before SAM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.local.cloudformation.cfn_yaml import CfnYamlError, load_cfn_yaml
from infra.local.cloudformation.language_extensions import apply_language_extensions
from infra.project_template import TEMPLATE_PATH

LOOPED: dict[str, Any] = {
    "Transform": ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"],
    "Mappings": {"Alarm": {"Errors": {"Name": "errors", "Period": 60}}},
    "Resources": {
        "Fn::ForEach::Functions": [
            "Function",
            ["SubmitFunction", "Get-Task"],
            {
                "&{Function}LogGroup": {
                    "Type": "AWS::Logs::LogGroup",
                    "Properties": {"LogGroupName": {"Fn::Sub": "/aws/lambda/${Function}"}},
                },
            },
        ],
        "Fn::ForEach::Alarms": [
            "Metric",
            ["Errors"],
            {
                "${Metric}Alarm": {
                    "Type": "AWS::CloudWatch::Alarm",
                    "Properties": {
                        "MetricName": {"Ref": "Metric"},
                        "Period": {"Fn::FindInMap": ["Alarm", {"Ref": "Metric"}, "Period"]},
                        "Dimensions": [{"Value": {"Ref": {"Fn::Sub": "Submit${Metric}"}}}],
                        "AlarmName": {"Fn::Sub": "${AWS::StackName}-${Metric}"},
                    },
                },
            },
        ],
        "Table": {"Type": "AWS::DynamoDB::Table"},
    },
}


def test_loops_write_one_entry_per_element_with_the_element_in_keys_and_values() -> None:
    resources = apply_language_extensions(LOOPED)["Resources"]
    assert set(resources) == {"SubmitFunctionLogGroup", "GetTaskLogGroup", "ErrorsAlarm", "Table"}
    assert resources["GetTaskLogGroup"]["Properties"] == {"LogGroupName": "/aws/lambda/Get-Task"}
    alarm = resources["ErrorsAlarm"]["Properties"]
    assert alarm["MetricName"] == "Errors"
    assert alarm["Period"] == 60
    assert alarm["Dimensions"] == [{"Value": {"Ref": "SubmitErrors"}}]
    assert alarm["AlarmName"] == {"Fn::Sub": "${AWS::StackName}-Errors"}


def test_the_next_transform_is_left_to_run() -> None:
    applied = apply_language_extensions(LOOPED)
    assert applied["Transform"] == "AWS::Serverless-2016-10-31"
    assert LOOPED["Transform"] == ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]


def test_nested_loops_and_loops_in_conditions() -> None:
    document = {
        "Transform": "AWS::LanguageExtensions",
        "Conditions": {
            "Fn::ForEach::Reserves": [
                "Name",
                ["A", "B"],
                {
                    "Reserves${Name}": {
                        "Fn::Not": [{"Fn::Equals": [{"Ref": {"Fn::Sub": "${Name}Param"}}, ""]}]
                    }
                },
            ]
        },
        "Resources": {
            "Fn::ForEach::Outer": [
                "Fn",
                ["A", "B"],
                {"Fn::ForEach::Inner": ["Metric", ["X", "Y"], {"${Fn}${Metric}": {"Type": "T"}}]},
            ]
        },
    }
    applied = apply_language_extensions(document)
    assert "Transform" not in applied
    assert set(applied["Resources"]) == {"AX", "AY", "BX", "BY"}
    assert applied["Conditions"]["ReservesB"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "BParam"}, ""]}]
    }


def test_a_template_without_the_transform_is_returned_as_is() -> None:
    document = {"Transform": "AWS::Serverless-2016-10-31", "Resources": {"Fn::ForEach::X": []}}
    assert apply_language_extensions(document) is document


def test_intrinsics_known_only_at_deployment_are_left_alone() -> None:
    document = {
        "Transform": "AWS::LanguageExtensions",
        "Mappings": {"Rate": {"1": {"Seconds": 120}}},
        "Resources": {
            "Alarm": {
                "Properties": {
                    "Period": {"Fn::FindInMap": ["Rate", {"Ref": "RateMinutes"}, "Seconds"]},
                    "Name": {"Fn::Sub": ["${AWS::StackName}-${Suffix}", {"Suffix": "x"}]},
                }
            }
        },
    }
    assert apply_language_extensions(document)["Resources"] == document["Resources"]


@pytest.mark.parametrize(
    ("resources", "problem"),
    [
        ({"Fn::ForEach::Bad": ["Id", ["A"]]}, "expected [identifier, collection, fragment]"),
        ({"Fn::ForEach::Bad": ["Id", {"Ref": "List"}, {"${Id}": {}}]}, "a literal list"),
        ({"Fn::ForEach::Bad": ["Id", ["A", "A"], {"${Id}": {}}]}, "the same keys twice"),
        ({"A": {}, "Fn::ForEach::Bad": ["Id", ["A"], {"${Id}": {}}]}, "already exist"),
        (
            {"R": {"Properties": {"P": {"Fn::FindInMap": ["Nope", "a", "b"]}}}},
            "Fn::FindInMap [Nope, a, b]: no such entry",
        ),
    ],
)
def test_what_cloudformation_would_refuse_is_refused(
    tmp_path: Path, resources: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(
        "Transform: AWS::LanguageExtensions\nResources: " + repr(resources).replace("'", '"'),
        encoding="utf-8",
    )
    with pytest.raises(CfnYamlError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        load_cfn_yaml(path)


def test_the_project_template_declares_the_transform_before_sam() -> None:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    assert "Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]" in text
    assert not any(
        key.startswith("Fn::ForEach::") for key in load_cfn_yaml(TEMPLATE_PATH)["Resources"]
    )
