"""`make template-check` refuses a loop identifier the transform would leave as typed."""

from pathlib import Path
from typing import Any

from infra.local.cloudformation.cfn_yaml import read_cfn_yaml
from infra.project_template import TEMPLATE_PATH
from infra.sam.loop_identifiers import main, misplaced_identifiers


def _loop(fragment: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": {"Fn::ForEach::Routes": ["Route", ["in", "res"], fragment]}}


def test_the_project_template_writes_identifiers_only_where_the_transform_substitutes() -> None:
    assert misplaced_identifiers(read_cfn_yaml(TEMPLATE_PATH)) == []


def test_keys_fn_sub_and_ref_are_where_the_identifier_belongs() -> None:
    document = _loop(
        {
            "${Route}Filter": {
                "Properties": {
                    "Pattern": {"Fn::Sub": "* /${Route}.php"},
                    "Listed": {"Fn::Sub": ["${Route}-${X}", {"X": {"Fn::Sub": "&{Route}"}}]},
                    "Name": {"Ref": "Route"},
                    "Arn": {"Ref": {"Fn::Sub": "${Route}Queue"}},
                }
            }
        }
    )
    assert misplaced_identifiers(document) == []


def test_a_plain_string_with_the_identifier_is_refused_wherever_it_stands() -> None:
    document = _loop(
        {
            "${Route}Filter": {
                "Properties": {
                    "Pattern": '{ $.routeKey = "* /${Route}.php" }',
                    "Listed": {"Fn::Sub": ["x-${X}", {"X": "&{Route}"}]},
                    "Nested": {"Fn::Join": ["", ["${Route}", "b"]]},
                }
            }
        }
    )
    problems = misplaced_identifiers(document)
    assert [problem.split(": loop identifier")[0] for problem in problems] == [
        "Resources.Fn::ForEach::Routes[2].${Route}Filter.Properties.Pattern",
        "Resources.Fn::ForEach::Routes[2].${Route}Filter.Properties.Listed.Fn::Sub[1].X",
        "Resources.Fn::ForEach::Routes[2].${Route}Filter.Properties.Nested.Fn::Join[1][0]",
    ]
    assert "loop identifier Route in a plain string" in problems[0]


def test_an_outer_loop_s_identifier_counts_inside_an_inner_loop_and_not_outside() -> None:
    document = {
        "Resources": {
            "Fn::ForEach::Outer": [
                "Fn",
                ["A"],
                {"Fn::ForEach::Inner": ["Metric", ["X"], {"${Fn}${Metric}": {"D": "${Fn}"}}]},
            ],
            "Other": {"D": "${Fn} outside the loop is the deployment's own Sub text"},
        }
    }
    (problem,) = misplaced_identifiers(document)
    assert problem.startswith(
        "Resources.Fn::ForEach::Outer[2].Fn::ForEach::Inner[2].${Fn}${Metric}.D"
    )


def test_the_command_fails_on_the_template_that_shipped_silent_compat_alarms(
    tmp_path: Path,
) -> None:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    broken = tmp_path / "template.yaml"
    broken.write_text(
        text.replace(
            'FilterPattern: !Sub \'{ ($.routeKey = "* /${Route}.php")',
            'FilterPattern: \'{ ($.routeKey = "* /${Route}.php")',
            1,
        ),
        encoding="utf-8",
    )
    assert broken.read_text(encoding="utf-8") != text
    assert main([str(broken)]) == 1
    assert main([str(TEMPLATE_PATH)]) == 0
