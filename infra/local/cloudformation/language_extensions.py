"""The AWS::LanguageExtensions transform, as CloudFormation applies it before the SAM transform.

Fn::ForEach loops are expanded (``${Id}`` and ``&{Id}`` in keys and strings, ``Ref: Id``), then
the intrinsics the transform resolves itself are folded to literals: Fn::FindInMap with literal
keys, a Fn::Sub left without variables, and intrinsics given to Ref and Fn::GetAtt. Everything else
(parameters, conditions, resource attributes) is left for the deployment to resolve.
"""

import re
from collections.abc import Mapping
from typing import Any

LANGUAGE_EXTENSIONS = "AWS::LanguageExtensions"
FOR_EACH_PREFIX = "Fn::ForEach::"
_SECTIONS_WITH_LOOPS = ("Conditions", "Resources", "Outputs")
_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


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
    mappings = document.get("Mappings", {})
    for section in _SECTIONS_WITH_LOOPS:
        if section in document:
            applied[section] = _fold(_expand(document[section]), mappings)
    return applied


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
