"""The SAM template as written, its parameters, and its translation to CloudFormation (offline)."""

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from samtranslator.internal.managed_policies import get_bundled_managed_policy_map
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

from infra.local.cloudformation.cfn_yaml import CfnYamlError, load_cfn_yaml
from infra.local.cloudformation.intrinsics import stringify
from infra.local.cloudformation.language_extensions import resolve_find_in_map

SERVERLESS_FUNCTION = "AWS::Serverless::Function"
SSM_PARAMETER_TYPE_PREFIX = "AWS::SSM::Parameter::Value<"
_PLACEHOLDER_CODE_BUCKET = "pingback-guard-local-code"


class TemplateError(ValueError):
    """The template cannot run locally (invalid, or uses something the local stack lacks)."""


@dataclass(frozen=True)
class SamTemplate:
    path: Path
    document: dict[str, Any]

    @classmethod
    def load(cls, path: Path) -> "SamTemplate":
        try:
            return cls(path.resolve(), load_cfn_yaml(path))
        except CfnYamlError as unreadable:
            raise TemplateError(str(unreadable)) from unreadable

    @property
    def resources(self) -> dict[str, Any]:
        resources = self.document.get("Resources", {})
        assert isinstance(resources, dict)
        return resources

    def parameter_values(self, overrides: Mapping[str, str]) -> dict[str, Any]:
        """Defaults merged with overrides; list-typed parameters become lists."""
        declared: dict[str, Any] = self.document.get("Parameters", {})
        unknown = sorted(set(overrides) - set(declared))
        if unknown:
            raise TemplateError(f"parameter overrides for undeclared parameters: {unknown}")
        return {
            name: _parameter_value(name, spec, overrides.get(name))
            for name, spec in declared.items()
        }

    def ssm_parameter_types(self) -> dict[str, str]:
        """Parameters whose value names an SSM parameter (AWS::SSM::Parameter::Value<...>)."""
        declared: dict[str, Any] = self.document.get("Parameters", {})
        return {
            name: str(spec["Type"])
            for name, spec in declared.items()
            if str(spec.get("Type", "")).startswith(SSM_PARAMETER_TYPE_PREFIX)
        }

    def function_code_dirs(self) -> dict[str, Path]:
        """Local CodeUri directory of every AWS::Serverless::Function, by logical id."""
        global_code_uri = self._function_globals().get("CodeUri")
        return {
            logical_id: self._local_code_dir(
                logical_id, resource.get("Properties", {}).get("CodeUri", global_code_uri)
            )
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == SERVERLESS_FUNCTION
        }

    def translate(self, parameter_values: Mapping[str, Any], region: str) -> dict[str, Any]:
        """The CloudFormation the SAM transform makes of this template, computed offline."""
        document = resolve_find_in_map(self._with_placeholder_code_locations(), parameter_values)
        translator = Translator(
            managed_policy_map=get_bundled_managed_policy_map("aws"),
            sam_parser=Parser(),
            boto_session=boto3.Session(region_name=region),
        )
        try:
            translated: dict[str, Any] = translator.translate(
                document, parameter_values=dict(parameter_values)
            )
        except InvalidDocumentException as invalid:
            messages = "; ".join(cause.message for cause in invalid.causes)
            raise TemplateError(f"{self.path}: SAM transform failed: {messages}") from invalid
        return translated

    def _function_globals(self) -> dict[str, Any]:
        function_globals = self.document.get("Globals", {}).get("Function", {})
        assert isinstance(function_globals, dict)
        return function_globals

    def _local_code_dir(self, logical_id: str, code_uri: Any) -> Path:
        if not isinstance(code_uri, str) or code_uri.startswith("s3://"):
            raise TemplateError(
                f"{logical_id}: CodeUri must be a local folder to run locally, got {code_uri!r}"
            )
        code_dir = (self.path.parent / code_uri).resolve()
        if not code_dir.is_dir():
            raise TemplateError(f"{logical_id}: CodeUri {code_dir} is not a directory")
        return code_dir

    def _with_placeholder_code_locations(self) -> dict[str, Any]:
        """A copy whose CodeUris are S3 URIs, as `sam package` leaves them for the transform."""
        document = copy.deepcopy(self.document)
        function_globals = document.get("Globals", {}).get("Function", {})
        if "CodeUri" in function_globals:
            function_globals["CodeUri"] = f"s3://{_PLACEHOLDER_CODE_BUCKET}/globals.zip"
        for logical_id, resource in document.get("Resources", {}).items():
            properties = resource.get("Properties", {})
            if resource.get("Type") == SERVERLESS_FUNCTION and "CodeUri" in properties:
                properties["CodeUri"] = f"s3://{_PLACEHOLDER_CODE_BUCKET}/{logical_id}.zip"
        return document


def _parameter_value(name: str, spec: Mapping[str, Any], override: str | None) -> Any:
    raw = override if override is not None else spec.get("Default")
    if raw is None:
        raise TemplateError(
            f"parameter {name} has no default: pass --parameter-overrides {name}=VALUE"
        )
    text = stringify(raw)
    problem = _constraint_violation(spec, text)
    if problem is not None:
        raise TemplateError(f"parameter {name}={text!r}: {problem}")
    parameter_type = str(spec.get("Type", "String"))
    if parameter_type == "CommaDelimitedList" or parameter_type.startswith("List<"):
        return [item.strip() for item in text.split(",")] if text else []
    return text


def _constraint_violation(spec: Mapping[str, Any], text: str) -> str | None:
    """What CloudFormation would refuse about this value, or None."""
    allowed = spec.get("AllowedValues")
    if allowed is not None and text not in [stringify(value) for value in allowed]:
        return f"not one of {allowed}"
    pattern = spec.get("AllowedPattern")
    if pattern is not None and re.fullmatch(str(pattern), text) is None:
        return f"does not match {pattern}"
    if not int(spec.get("MinLength", 0)) <= len(text) <= int(spec.get("MaxLength", len(text))):
        return "length out of MinLength..MaxLength"
    if spec.get("Type") == "Number":
        try:
            number = float(text)
        except ValueError:
            return "not a number"
        if not float(spec.get("MinValue", number)) <= number <= float(spec.get("MaxValue", number)):
            return f"out of {spec.get('MinValue', '')}..{spec.get('MaxValue', '')}"
    return None
