"""Load a CloudFormation YAML template, the one way every reader of template.yaml loads it.

The short-form intrinsic tags become their long JSON form, and a template that declares
AWS::LanguageExtensions comes back as that transform leaves it (Fn::ForEach expanded): what the SAM
transform, the local stack, the tests and the bench all see.
"""

from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from infra.local.cloudformation.language_extensions import (
    LanguageExtensionsError,
    apply_language_extensions,
)

_TAGS_WITHOUT_FN_PREFIX = frozenset({"Ref", "Condition"})


class CfnYamlError(ValueError):
    """The file cannot be read, is not YAML, or is not a template mapping."""


class _CfnLoader(yaml.SafeLoader):  # type: ignore[misc]
    """A SafeLoader of its own, so registering the tags does not change yaml.SafeLoader."""


def _construct_intrinsic(loader: _CfnLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = tag_suffix if tag_suffix in _TAGS_WITHOUT_FN_PREFIX else f"Fn::{tag_suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def load_cfn_yaml(path: Path) -> dict[str, Any]:
    document = read_cfn_yaml(path)
    try:
        return apply_language_extensions(document)
    except LanguageExtensionsError as invalid:
        raise CfnYamlError(f"{path}: {invalid}") from invalid


def read_cfn_yaml(path: Path) -> dict[str, Any]:
    """The template as written (Fn::ForEach not expanded), intrinsic tags in their long form."""
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader)  # noqa: S506
    except (OSError, yaml.YAMLError) as unreadable:
        raise CfnYamlError(f"{path}: {unreadable}") from unreadable
    if not isinstance(document, dict):
        raise CfnYamlError(f"{path} is not a CloudFormation template (not a mapping)")
    return document
