"""The one template loader applies AWS::LanguageExtensions as CloudFormation does before SAM."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cfnlint.decode import decode
from cfnlint.template.transforms._language_extensions import language_extension

from infra.local.cloudformation.cfn_yaml import CfnYamlError, load_cfn_yaml
from infra.local.cloudformation.language_extensions import (
    LanguageExtensionsError,
    apply_language_extensions,
    resolve_find_in_map,
)
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
        ({"Fn::ForEach::Bad": ["Id", ["A", 1], {"${Id}": {}}]}, "a literal list of strings"),
        ({"Fn::ForEach::Bad": ["Id", ["A", "A"], {"${Id}": {}}]}, "Duplicate A while doing"),
        ({"A": {}, "Fn::ForEach::Bad": ["Id", ["A"], {"${Id}": {}}]}, "Duplicate A while doing"),
        (
            {"R": {"Properties": {"P": {"Fn::FindInMap": ["Nope", "a", "b"]}}}},
            "Fn::FindInMap [Nope, a, b]: no such entry",
        ),
        # AWS's transform: "Unrecognized DeletionPolicy RetainExceptOnCreate"
        # (aws-cloudformation/cfn-language-discussion#139).
        (
            {"Table": {"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "RetainExceptOnCreate"}},
            "Table: Unrecognized DeletionPolicy RetainExceptOnCreate: the"
            " AWS::LanguageExtensions transform accepts only Delete, Retain, Snapshot"
            " (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "function-refs-in-policy-attributes.html",
        ),
        (
            {
                "T": {
                    "UpdateReplacePolicy": {"Fn::If": ["IsProd", "Retain", "RetainExceptOnCreate"]}
                }
            },
            "T: Unrecognized UpdateReplacePolicy RetainExceptOnCreate",
        ),
        (
            {
                "Fn::ForEach::Q": [
                    "Id",
                    ["A"],
                    {"${Id}": {"DeletionPolicy": {"Fn::Sub": "Keep${Id}"}}},
                ]
            },
            "A: Unrecognized DeletionPolicy KeepA",
        ),
        (
            {"R": {"Properties": {"P": {"Fn::GetAtt": {"Fn::Sub": "Queue.Arn"}}}}},
            "Resources.R.Properties.P: Fn::GetAtt {'Fn::Sub': 'Queue.Arn'}: a function may"
            " stand for the logical name or the attribute only in the list form",
        ),
        (
            {"R": {"Properties": {"P": {"Fn::GetAtt": [{"Fn::Select": [0, ["Q"]]}, "Arn"]}}}},
            "Fn::GetAtt cannot resolve ['Fn::Select']: the AWS::LanguageExtensions transform"
            " resolves only Fn::Base64, Fn::FindInMap, Fn::If, Fn::Join, Fn::Sub,"
            " Fn::ToJsonString, Ref there (https://docs.aws.amazon.com/AWSCloudFormation/",
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
    with pytest.raises(CfnYamlError, match=re.escape(problem)):
        load_cfn_yaml(path)


def test_loops_are_refused_outside_resources_conditions_and_outputs() -> None:
    document = {
        "Transform": "AWS::LanguageExtensions",
        "Mappings": {"Fn::ForEach::Maps": ["Id", ["A"], {"${Id}": {"k": {"v": 1}}}]},
        "Resources": {},
    }
    with pytest.raises(
        LanguageExtensionsError,
        match=re.escape(
            "Mappings: Fn::ForEach::Maps: the AWS::LanguageExtensions transform supports its"
            " functions only in the Conditions, Resources, Outputs sections"
            " (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "transform-aws-languageextensions.html)"
        ),
    ):
        apply_language_extensions(document)


def test_what_the_transform_accepts_in_policies_and_getatt() -> None:
    document = {
        "Transform": "AWS::LanguageExtensions",
        "Mappings": {"Queues": {"Dead": {"Name": "DeadLetterQueue"}}},
        "Resources": {
            "Table": {
                "DeletionPolicy": {"Fn::If": ["IsProd", "Retain", "Delete"]},
                "UpdateReplacePolicy": "Snapshot",
            },
            "Fn::ForEach::Reads": [
                "Queue",
                ["Dead"],
                {
                    "${Queue}Alarm": {
                        "DeletionPolicy": {"Ref": "PolicyParameter"},
                        "Properties": {
                            "Arn": {
                                "Fn::GetAtt": [
                                    {"Fn::FindInMap": ["Queues", {"Ref": "Queue"}, "Name"]},
                                    "Arn",
                                ]
                            },
                            "Url": {"Fn::GetAtt": ["DeadLetterQueue", {"Ref": "Attribute"}]},
                        },
                    }
                },
            ],
        },
    }
    resources = apply_language_extensions(document)["Resources"]
    assert resources["DeadAlarm"]["Properties"]["Arn"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}


def test_the_project_tasks_table_outlives_the_stack_with_a_policy_the_transform_accepts(
    tmp_path: Path,
) -> None:
    table = load_cfn_yaml(TEMPLATE_PATH)["Resources"]["TasksTable"]
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    broken = tmp_path / "template.yaml"
    broken.write_text(
        text.replace(
            "    DeletionPolicy: Retain\n", "    DeletionPolicy: RetainExceptOnCreate\n", 1
        ),
        encoding="utf-8",
    )
    with pytest.raises(
        CfnYamlError, match="TasksTable: Unrecognized DeletionPolicy RetainExceptOnCreate"
    ):
        load_cfn_yaml(broken)


def test_the_project_template_declares_the_transform_before_sam() -> None:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    assert "Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]" in text
    assert not any(
        key.startswith("Fn::ForEach::") for key in load_cfn_yaml(TEMPLATE_PATH)["Resources"]
    )


def test_maps_keyed_by_parameters_are_resolved_with_the_stack_s_values() -> None:
    """The transform runs with the stack's parameters: a Fn::Sub key (which CloudFormation alone
    refuses in Fn::FindInMap) never reaches CloudFormation."""
    arn_key = {"Fn::FindInMap": ["PollRate", {"Fn::GetAtt": ["Q", "Arn"]}, "X"]}
    document: dict[str, Any] = {
        "Mappings": {"PollRate": {"2": {"TwoSweepsSeconds": 240}}},
        "Resources": {
            "Alarm": {
                "Properties": {
                    "Period": {
                        "Fn::FindInMap": [
                            "PollRate",
                            {"Fn::Sub": "${PollRateMinutes}"},
                            "TwoSweepsSeconds",
                        ]
                    },
                    "Arn": arn_key,
                }
            }
        },
    }
    resolved = resolve_find_in_map(document, {"PollRateMinutes": "2"})
    properties = resolved["Resources"]["Alarm"]["Properties"]
    assert properties["Period"] == 240
    assert properties["Arn"] == arn_key


def test_the_twin_expands_the_whole_project_template_as_cfn_lint_s_model_does() -> None:
    """cfn-lint's model of the transform (AWS maintains it), run on the template as cfn-lint
    decodes it: every section equal, but Transform, which the twin leaves to the next one."""
    decoded, problems = decode(str(TEMPLATE_PATH))
    assert problems == []
    matches, modelled = language_extension(
        SimpleNamespace(template=decoded, regions=["us-east-1"], filename=str(TEMPLATE_PATH))
    )
    assert matches == []
    twin = load_cfn_yaml(TEMPLATE_PATH)
    assert json.loads(json.dumps(modelled)) == {
        **twin,
        "Transform": ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"],
    }


def test_a_plain_string_keeps_the_loop_identifier_as_typed() -> None:
    """As on AWS: the six compat metric filters once matched "* /${Route}.php" there."""
    document = {
        "Transform": "AWS::LanguageExtensions",
        "Resources": {
            "Fn::ForEach::Routes": [
                "Route",
                ["in"],
                {
                    "${Route}Filter": {
                        "Properties": {
                            "Typed": "* /${Route}.php",
                            "Substituted": {"Fn::Sub": "* /${Route}.php"},
                            "Named": {"Ref": "Route"},
                            "Kept": {"Fn::Sub": "${AWS::StackName}-&{Route}"},
                        }
                    }
                },
            ]
        },
    }
    properties = apply_language_extensions(document)["Resources"]["inFilter"]["Properties"]
    assert properties == {
        "Typed": "* /${Route}.php",
        "Substituted": "* /in.php",
        "Named": "in",
        "Kept": {"Fn::Sub": "${AWS::StackName}-in"},
    }


def test_a_map_keyed_by_a_parameter_waits_for_the_stack_s_value() -> None:
    """cfn-lint's model, given the Mappings, folds this to a row it guesses (240 here); the
    transform reads the stack's value, so the twin gives the model no Mappings."""
    document = {
        "Transform": "AWS::LanguageExtensions",
        "Parameters": {"RateMinutes": {"Type": "String"}},
        "Mappings": {"Rate": {"1": {"Seconds": 120}, "2": {"Seconds": 240}}},
        "Resources": {
            "Alarm": {
                "Properties": {
                    "Period": {"Fn::FindInMap": ["Rate", {"Ref": "RateMinutes"}, "Seconds"]}
                }
            }
        },
    }
    _, guessed = language_extension(
        SimpleNamespace(template=document, regions=["us-east-1"], filename=None)
    )
    assert guessed["Resources"]["Alarm"]["Properties"]["Period"] == 240
    applied = apply_language_extensions(document)
    assert applied["Resources"] == document["Resources"]
    resolved = resolve_find_in_map(applied, {"RateMinutes": "1"})
    assert resolved["Resources"]["Alarm"]["Properties"]["Period"] == 120


def test_the_compat_route_filters_match_their_own_route() -> None:
    resources = load_cfn_yaml(TEMPLATE_PATH)["Resources"]
    for route in ("in", "res"):
        for answer in ("Throttled", "4xx", "5xx"):
            metric_filter = resources[f"{route}Php{answer}Filter"]["Properties"]
            assert f'"* /{route}.php"' in metric_filter["FilterPattern"]
            (transformation,) = metric_filter["MetricTransformations"]
            assert transformation["MetricName"] == f"{route}Php{answer}"
            alarm = resources[f"{route}Php{answer}Alarm"]["Properties"]
            assert alarm["MetricName"] == f"{route}Php{answer}"
            assert f"{route}.php" in alarm["AlarmDescription"]
