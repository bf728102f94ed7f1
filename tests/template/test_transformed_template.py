"""cfn-lint of template.yaml as CloudFormation receives it (after AWS::LanguageExtensions and the
SAM transform): what `make template-check` runs, and what it catches that a lint of the SAM
template misses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint

from infra.project_template import TEMPLATE_PATH
from infra.sam.transformed_template import main, transformed_document
from tests.template.conftest import ROOT


def _errors(document: dict[str, Any]) -> list[Any]:
    """cfn-lint's errors (E rules) on a transformed document, in us-east-1 as the CLI lints."""
    return [match for match in lint(json.dumps(document)) if match.rule.id.startswith("E")]


def _copy_with_register_description(tmp_path: Path, description: str) -> Path:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    start = text.index("  RegisterFunction:\n")
    described = re.compile(r"      Description: >-\n(?:        .*\n)+")
    match = described.search(text, start)
    assert match is not None
    broken = text[: match.start()] + f'      Description: "{description}"\n' + text[match.end() :]
    copy = tmp_path / "template.yaml"
    copy.write_text(broken, encoding="utf-8")
    for folder in ("functions", "examples"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    return copy


def test_the_project_template_lints_clean_after_both_transforms() -> None:
    document = transformed_document(TEMPLATE_PATH, {})
    assert "Transform" not in document
    assert not any(
        body["Type"].startswith("AWS::Serverless::") for body in document["Resources"].values()
    )
    assert _errors(document) == []


def test_a_description_over_256_characters_is_refused_on_the_created_function(
    tmp_path: Path,
) -> None:
    """cfn-lint of the SAM template does not check AWS::Serverless::Function's Description;
    on the transformed template the AWS::Lambda::Function's schema does (E3033): the limit is
    CreateFunction's, from the resource schema cfn-lint ships, not from a list kept here.
    https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html"""
    broken = _copy_with_register_description(tmp_path, "x" * 300)
    errors = _errors(transformed_document(broken, {}))
    (too_long,) = [match for match in errors if "RegisterFunction" in str(match.path)]
    assert too_long.rule.id == "E3033"
    assert "is longer than 256" in too_long.message
    assert list(too_long.path)[:3] == ["Resources", "RegisterFunction", "Properties"]


def test_the_entry_point_writes_the_transformed_json(tmp_path: Path) -> None:
    out = tmp_path / "nested" / "transformed.json"
    assert main([str(out), "--parameter-overrides", "PushApiAccessLogs=true"]) == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["Resources"]["RegisterFunction"]["Type"] == "AWS::Lambda::Function"


def test_the_entry_point_says_what_the_transform_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "out.json"), "--parameter-overrides", "NoSuchParameter=1"]) == 1
    assert "NoSuchParameter" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_template_check_lints_the_transformed_template() -> None:
    """`make test` runs static-checks, which runs template-check, which runs this lint."""
    sam_mk = (ROOT / "infra" / "sam" / "sam.mk").read_text(encoding="utf-8")
    (gate,) = [line for line in sam_mk.splitlines() if line.startswith("template-check:")]
    assert "cfn-lint-transformed" in gate.split()
    recipe = sam_mk.split("\ncfn-lint-transformed:", 1)[1].split("\n\n", 1)[0]
    assert "-m infra.sam.transformed_template $(TRANSFORMED_TEMPLATE)" in recipe
    assert "cfn-lint --ignore-checks W7001 -- $(TRANSFORMED_TEMPLATE)" in recipe
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^static-checks:.*\btemplate-check\b", makefile, re.MULTILINE)
