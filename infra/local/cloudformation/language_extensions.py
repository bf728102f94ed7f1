"""The AWS::LanguageExtensions transform, as CloudFormation applies it before the SAM transform.

Fn::ForEach loops are expanded by cfn-lint's model of the transform (cfnlint.template.transforms.
_language_extensions, maintained by AWS): the loop identifier is written into keys, into Fn::Sub
strings (``${Id}``, and ``&{Id}`` with the element's non-alphanumeric characters dropped) and into
Ref (``Ref: Id`` is the element); a plain string keeps ``${Id}`` as typed (the Fn::ForEach page's
examples put every value that varies in a Fn::Sub or a Ref). `make template-check` refuses such a
string (infra/sam/loop_identifiers.py). Then the intrinsics the transform resolves itself are
folded to literals: Fn::FindInMap with literal keys, a Fn::Sub left without variables, and
intrinsics given to Ref and Fn::GetAtt. Everything else (parameters, conditions, resource
attributes) is left for the deployment to resolve.
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-foreach.html

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

from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

from cfnlint.template.transforms._language_extensions import language_extension

from infra.local.cloudformation.intrinsics import NoResources, Resolver, UnresolvableError

LANGUAGE_EXTENSIONS = "AWS::LanguageExtensions"
FOR_EACH_PREFIX = "Fn::ForEach::"
_SECTIONS_WITH_LOOPS = ("Conditions", "Resources", "Outputs")
# Only pseudo parameters in a collection would read it: the collections here are literal.
_MODEL_REGION = "us-east-1"
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
    for section in _SECTIONS_WITH_LOOPS:
        _check_loops(document.get(section))
    expanded = _expand(document)
    mappings = document.get("Mappings", {})
    for section in _SECTIONS_WITH_LOOPS:
        if section in expanded:
            _check_getatt_functions(expanded[section], section)
            applied[section] = _fold(expanded[section], mappings)
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


def _check_loops(value: Any) -> None:
    """The loops whose expansion the deployment decides before it runs: a collection written as
    a literal list of strings. (cfn-lint's model lints any other collection with random values
    in its place; the twin refuses it rather than deploy those.)"""
    if isinstance(value, list):
        for item in value:
            _check_loops(item)
        return
    if not isinstance(value, dict):
        return
    for key, item in value.items():
        if key.startswith(FOR_EACH_PREFIX):
            _check_loop(key, item)
        _check_loops(item)


def _check_loop(key: str, arguments: Any) -> None:
    if not (isinstance(arguments, list) and len(arguments) == 3):
        raise LanguageExtensionsError(f"{key}: expected [identifier, collection, fragment]")
    identifier, collection, fragment = arguments
    if not isinstance(identifier, str) or not isinstance(fragment, dict):
        raise LanguageExtensionsError(f"{key}: expected [identifier, collection, fragment]")
    if not (isinstance(collection, list) and all(isinstance(item, str) for item in collection)):
        raise LanguageExtensionsError(f"{key}: the collection must be a literal list of strings")


def _expand(document: Mapping[str, Any]) -> dict[str, Any]:
    """Every Fn::ForEach of the document expanded by cfn-lint's model of the transform, which
    AWS maintains: the identifier is written into keys, Fn::Sub strings and Ref (a Ref to the
    identifier becomes the element), never into a plain string, which stays as typed.

    The model is given no Mappings: it would fold a Fn::FindInMap keyed by a parameter to the
    first row holding the key (a linter's guess), where the transform uses the stack's value
    (resolve_find_in_map does, with the values). The maps whose keys are literals, or loop
    elements, are folded by _fold after it."""
    model_input = {key: value for key, value in document.items() if key != "Mappings"}
    matches, expanded = language_extension(
        SimpleNamespace(template=model_input, regions=[_MODEL_REGION], filename=None)
    )
    if matches or not isinstance(expanded, dict):
        problems = "; ".join(str(match.message) for match in matches)
        raise LanguageExtensionsError(problems or "the transform returned no template")
    return expanded


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
