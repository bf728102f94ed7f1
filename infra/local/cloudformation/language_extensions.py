"""The AWS::LanguageExtensions transform, as CloudFormation applies it before the SAM transform.

Fn::ForEach loops are expanded (``${Id}`` and ``&{Id}`` in keys and strings, ``Ref: Id``), then
the intrinsics the transform resolves itself are folded to literals: Fn::FindInMap with literal
keys, a Fn::Sub left without variables, and intrinsics given to Ref and Fn::GetAtt. Everything else
(parameters, conditions, resource attributes) is left for the deployment to resolve.

What AWS's transform refuses is refused here, each message naming the rule:
- a DeletionPolicy / UpdateReplacePolicy other than Delete, Retain or Snapshot (the transform
  fails with "Unrecognized DeletionPolicy RetainExceptOnCreate", although CloudFormation without
  the transform accepts that value: aws-cloudformation/cfn-language-discussion#139);
- a function inside Fn::GetAtt other than those the transform resolves there, or one given to the
  string form ("Name.Attribute") instead of the list form [logicalName, attributeName];
- a Fn::ForEach outside Resources, Conditions and Outputs, the only sections where the
  transform's functions are supported.
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/transform-aws-languageextensions.html
"""

import re
from collections.abc import Iterator, Mapping
from typing import Any

from infra.local.cloudformation.intrinsics import NoResources, Resolver, UnresolvableError

LANGUAGE_EXTENSIONS = "AWS::LanguageExtensions"
FOR_EACH_PREFIX = "Fn::ForEach::"
_SECTIONS_WITH_LOOPS = ("Conditions", "Resources", "Outputs")
_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")
TRANSFORM_DOC = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
    "transform-aws-languageextensions.html"
)
POLICY_ATTRIBUTES_DOC = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
    "function-refs-in-policy-attributes.html"
)
GETATT_DOC = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "intrinsic-function-reference-getatt.html"
)
# The options the transform recognizes ("must resolve to valid DeletionPolicy options").
POLICY_ATTRIBUTES = ("DeletionPolicy", "UpdateReplacePolicy")
RECOGNIZED_POLICIES = ("Delete", "Retain", "Snapshot")
# The functions the transform resolves inside Fn::GetAtt, as cfn-lint's schema of Fn::GetAtt
# under AWS::LanguageExtensions lists them (cfnlint/data/schemas/other/functions/getatt.json).
GETATT_FUNCTIONS = frozenset(
    {"Ref", "Fn::Base64", "Fn::FindInMap", "Fn::Sub", "Fn::If", "Fn::Join", "Fn::ToJsonString"}
)


class LanguageExtensionsError(ValueError):
    """A loop or a folded intrinsic CloudFormation would refuse."""


def apply_language_extensions(document: dict[str, Any]) -> dict[str, Any]:
    """The document the next transform receives; unchanged if it does not declare this one."""
    transforms = _as_list(document.get("Transform"))
    if LANGUAGE_EXTENSIONS not in transforms:
        return document
    applied = dict(document)
    remaining = [name for name in transforms if name != LANGUAGE_EXTENSIONS]
    if remaining:
        applied["Transform"] = remaining[0] if len(remaining) == 1 else remaining
    else:
        del applied["Transform"]
    _refuse_loops_outside_their_sections(document)
    mappings = document.get("Mappings", {})
    for section in _SECTIONS_WITH_LOOPS:
        if section in document:
            expanded = _expand(document[section])
            _check_getatt_functions(expanded, section)
            applied[section] = _fold(expanded, mappings)
    _check_policies(applied.get("Resources", {}))
    return applied


def _refuse_loops_outside_their_sections(document: Mapping[str, Any]) -> None:
    for section, content in document.items():
        if section in _SECTIONS_WITH_LOOPS:
            continue
        loops = [key for key in _keys(content) if key.startswith(FOR_EACH_PREFIX)]
        if loops:
            raise LanguageExtensionsError(
                f"{section}: {loops[0]}: the AWS::LanguageExtensions transform supports its"
                f" functions only in the {', '.join(_SECTIONS_WITH_LOOPS)} sections"
                f" ({TRANSFORM_DOC})"
            )


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _keys(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _keys(item)


def resolve_find_in_map(document: dict[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The document with each Fn::FindInMap whose keys the stack's parameter values decide
    written as its value, as the transform leaves it (it runs with those values; a Fn::Sub key,
    which only the transform accepts, never reaches CloudFormation). Keys it cannot know before
    deployment (resource attributes) stay for the deployment."""
    resolver = Resolver(parameters, NoResources(), mappings=document.get("Mappings", {}))
    resolved = dict(document)
    for section in _SECTIONS_WITH_LOOPS:
        if section in document:
            resolved[section] = _resolve_maps(document[section], resolver)
    return resolved


def _resolve_maps(value: Any, resolver: Resolver) -> Any:
    if isinstance(value, list):
        return [_resolve_maps(item, resolver) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::FindInMap"}:
        try:
            return resolver.resolve(value)
        except UnresolvableError:
            return value
    return {key: _resolve_maps(item, resolver) for key, item in value.items()}


def _check_policies(resources: Mapping[str, Any]) -> None:
    for logical_id, resource in resources.items():
        if not isinstance(resource, dict):
            continue
        for attribute in POLICY_ATTRIBUTES:
            if attribute in resource:
                for option in _policy_options(resource[attribute]):
                    if option not in RECOGNIZED_POLICIES:
                        raise LanguageExtensionsError(
                            f"{logical_id}: Unrecognized {attribute} {option}: the"
                            f" AWS::LanguageExtensions transform accepts only"
                            f" {', '.join(RECOGNIZED_POLICIES)} ({POLICY_ATTRIBUTES_DOC};"
                            " aws-cloudformation/cfn-language-discussion#139)"
                        )


def _policy_options(value: Any) -> list[Any]:
    """The literal options a policy attribute can take (both branches of an Fn::If)."""
    if isinstance(value, dict) and set(value) == {"Fn::If"}:
        arguments = value["Fn::If"]
        if isinstance(arguments, list) and len(arguments) == 3:
            return _policy_options(arguments[1]) + _policy_options(arguments[2])
    if isinstance(value, dict):
        return []  # a Ref to a parameter: its value is checked by the deployment
    return [value]


def _check_getatt_functions(value: Any, where: str) -> None:
    if isinstance(value, list):
        for item in value:
            _check_getatt_functions(item, where)
        return
    if not isinstance(value, dict):
        return
    if set(value) == {"Fn::GetAtt"}:
        _check_getatt(value["Fn::GetAtt"], where)
    for key, item in value.items():
        _check_getatt_functions(item, f"{where}.{key}")


def _check_getatt(argument: Any, where: str) -> None:
    if isinstance(argument, str):
        return
    if not isinstance(argument, list) or len(argument) != 2:
        raise LanguageExtensionsError(
            f"{where}: Fn::GetAtt {argument!r}: a function may stand for the logical name or the"
            " attribute only in the list form [logicalName, attributeName]"
            f" (AWS::LanguageExtensions: {GETATT_DOC})"
        )
    for part in argument:
        if isinstance(part, dict):
            functions = sorted(set(part) - GETATT_FUNCTIONS)
            if len(part) != 1 or functions:
                raise LanguageExtensionsError(
                    f"{where}: Fn::GetAtt cannot resolve {sorted(part)}: the"
                    f" AWS::LanguageExtensions transform resolves only"
                    f" {', '.join(sorted(GETATT_FUNCTIONS))} there ({GETATT_DOC}; {TRANSFORM_DOC})"
                )
        elif not isinstance(part, str):
            raise LanguageExtensionsError(
                f"{where}: Fn::GetAtt {argument!r}: each part must be a string or a function"
                f" ({GETATT_DOC})"
            )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _expand(value: Any) -> Any:
    if isinstance(value, list):
        return [_expand(item) for item in value]
    if not isinstance(value, dict):
        return value
    expanded: dict[str, Any] = {}
    for key, item in value.items():
        generated = _loop(key, item) if key.startswith(FOR_EACH_PREFIX) else {key: _expand(item)}
        clashes = sorted(set(expanded) & set(generated))
        if clashes:
            raise LanguageExtensionsError(f"{key}: generates keys that already exist: {clashes}")
        expanded.update(generated)
    return expanded


def _loop(key: str, arguments: Any) -> dict[str, Any]:
    if not (isinstance(arguments, list) and len(arguments) == 3):
        raise LanguageExtensionsError(f"{key}: expected [identifier, collection, fragment]")
    identifier, collection, fragment = arguments
    if not isinstance(identifier, str) or not isinstance(fragment, dict):
        raise LanguageExtensionsError(f"{key}: expected [identifier, collection, fragment]")
    if not isinstance(collection, list):
        raise LanguageExtensionsError(f"{key}: the collection must be a literal list")
    generated: dict[str, Any] = {}
    for element in collection:
        copy = _expand(_substitute(fragment, identifier, str(element)))
        clashes = sorted(set(generated) & set(copy))
        if clashes:
            raise LanguageExtensionsError(f"{key}: generates the same keys twice: {clashes}")
        generated.update(copy)
    return generated


def _substitute(value: Any, identifier: str, element: str) -> Any:
    if isinstance(value, str):
        return value.replace(f"${{{identifier}}}", element).replace(
            f"&{{{identifier}}}", _NOT_ALPHANUMERIC.sub("", element)
        )
    if isinstance(value, list):
        return [_substitute(item, identifier, element) for item in value]
    if isinstance(value, dict):
        if value == {"Ref": identifier}:
            return element
        return {
            _substitute(key, identifier, element): _substitute(item, identifier, element)
            for key, item in value.items()
        }
    return value


def _fold(value: Any, mappings: Mapping[str, Any]) -> Any:
    if isinstance(value, list):
        return [_fold(item, mappings) for item in value]
    if not isinstance(value, dict):
        return value
    folded = {key: _fold(item, mappings) for key, item in value.items()}
    if len(folded) != 1:
        return folded
    ((function, argument),) = folded.items()
    if function == "Fn::FindInMap" and _literal_keys(argument):
        return _find_in_map(mappings, argument)
    if function == "Fn::Sub" and isinstance(argument, str) and "${" not in argument:
        return argument
    return folded


def _literal_keys(argument: Any) -> bool:
    """Three keys known before deployment (a fourth, DefaultValue, is not folded here)."""
    return (
        isinstance(argument, list)
        and len(argument) == 3
        and all(isinstance(key, str | int) for key in argument)
    )


def _find_in_map(mappings: Mapping[str, Any], keys: list[Any]) -> Any:
    map_name, top_key, second_key = (str(key) for key in keys)
    try:
        return mappings[map_name][top_key][second_key]
    except KeyError as missing:
        raise LanguageExtensionsError(
            f"Fn::FindInMap [{map_name}, {top_key}, {second_key}]: no such entry"
        ) from missing
