"""Resolve CloudFormation intrinsic functions against a deployed (local) stack.

One resolver serves every consumer of the template: function environment variables, event
sources, schedules, alarms and outputs are read through it, so they all see the same names.
"""

import base64
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

PSEUDO_NO_VALUE = "AWS::NoValue"
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class UnresolvableError(ValueError):
    """A reference the local stack cannot resolve (unknown name, or an attribute not available)."""


class NoValue:
    """The value of `Ref: AWS::NoValue`: the property is removed from its parent."""


NO_VALUE = NoValue()


class ResourceLookup(Protocol):
    def physical_id(self, logical_id: str) -> str: ...

    def attribute(self, logical_id: str, attribute: str) -> Any: ...

    def __contains__(self, logical_id: object) -> bool: ...


class NoResources:
    """A lookup for resolving before anything exists: only parameters and pseudo parameters."""

    def physical_id(self, logical_id: str) -> str:
        raise UnresolvableError(f"resource {logical_id} does not exist yet")

    def attribute(self, logical_id: str, attribute: str) -> Any:
        raise UnresolvableError(f"resource {logical_id} does not exist yet")

    def __contains__(self, logical_id: object) -> bool:
        return False


@dataclass
class Resolver:
    """Evaluates Ref, Fn::* and conditions; `parameters` includes the pseudo parameters."""

    parameters: Mapping[str, Any]
    resources: ResourceLookup
    conditions: Mapping[str, Any] = field(default_factory=dict)
    mappings: Mapping[str, Any] = field(default_factory=dict)
    _condition_values: dict[str, bool] = field(default_factory=dict, init=False)

    def with_resources(self, resources: ResourceLookup) -> "Resolver":
        return Resolver(self.parameters, resources, self.conditions, self.mappings)

    def resolve(self, value: Any) -> Any:
        """The value with every intrinsic evaluated; `AWS::NoValue` entries are dropped."""
        resolved = self._resolve(value)
        return None if resolved is NO_VALUE else resolved

    def condition(self, name: str) -> bool:
        if name not in self._condition_values:
            if name not in self.conditions:
                raise UnresolvableError(f"condition {name} is not declared")
            self._condition_values[name] = self._truth(self.conditions[name])
        return self._condition_values[name]

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            items = [self._resolve(item) for item in value]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        function = _intrinsic_name(value)
        if function is not None:
            return self._evaluate(function, value[function])
        resolved = {key: self._resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not NO_VALUE}

    def _evaluate(self, function: str, argument: Any) -> Any:
        evaluator = self._evaluators().get(function)
        if evaluator is None:
            raise UnresolvableError(f"{function} is not supported by the local stack")
        return evaluator(argument)

    def _evaluators(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Sub": self._sub,
            "Fn::Join": self._join,
            "Fn::Select": self._select,
            "Fn::Split": self._split,
            "Fn::If": self._if,
            "Fn::Equals": lambda argument: self._truth({"Fn::Equals": argument}),
            "Fn::Not": lambda argument: self._truth({"Fn::Not": argument}),
            "Fn::And": lambda argument: self._truth({"Fn::And": argument}),
            "Fn::Or": lambda argument: self._truth({"Fn::Or": argument}),
            "Fn::FindInMap": self._find_in_map,
            "Fn::Base64": lambda argument: base64.b64encode(
                str(self._resolve(argument)).encode()
            ).decode(),
            "Fn::GetAZs": lambda _argument: [
                f"{self.parameters['AWS::Region']}{zone}" for zone in "abc"
            ],
            "Fn::ToJsonString": lambda argument: json.dumps(self._resolve(argument)),
            "Fn::Length": lambda argument: len(self._resolve(argument)),
        }

    def _ref(self, name: Any) -> Any:
        if name == PSEUDO_NO_VALUE:
            return NO_VALUE
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            return self.resources.physical_id(name)
        raise UnresolvableError(f"Ref {name}: no such parameter or resource")

    def _get_att(self, argument: Any) -> Any:
        if isinstance(argument, str):
            argument = argument.split(".", 1)
        logical_id, attribute = (self._resolve(part) for part in argument)
        if logical_id not in self.resources:
            raise UnresolvableError(f"Fn::GetAtt {logical_id}.{attribute}: no such resource")
        return self.resources.attribute(logical_id, attribute)

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        values = {name: self._resolve(value) for name, value in variables.items()}

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in values:
                return str(values[name])
            if name in self.parameters or name in self.resources:
                return str(self._ref(name))
            if "." in name:
                return str(self._get_att(name.split(".", 1)))
            raise UnresolvableError(f"Fn::Sub ${{{name}}}: no such parameter or resource")

        return _SUB_VARIABLE.sub(substitute, str(text))

    def _join(self, argument: Any) -> str:
        delimiter, items = argument
        return str(delimiter).join(str(item) for item in self._resolve(items))

    def _select(self, argument: Any) -> Any:
        index, items = argument
        return self._resolve(items)[int(self._resolve(index))]

    def _split(self, argument: Any) -> list[str]:
        delimiter, text = argument
        return str(self._resolve(text)).split(str(delimiter))

    def _if(self, argument: Any) -> Any:
        condition, when_true, when_false = argument
        return self._resolve(when_true if self.condition(condition) else when_false)

    def _find_in_map(self, argument: Any) -> Any:
        map_name, top_key, second_key = (str(self._resolve(part)) for part in argument[:3])
        try:
            return self.mappings[map_name][top_key][second_key]
        except KeyError as missing:
            raise UnresolvableError(f"Fn::FindInMap {map_name}/{top_key}/{second_key}") from missing

    def _truth(self, expression: Any) -> bool:
        if isinstance(expression, bool | str):
            return _as_bool(expression)
        function = (
            _intrinsic_name(expression, condition_allowed=True)
            if isinstance(expression, dict)
            else None
        )
        operator = self._condition_operators().get(function or "")
        if operator is not None:
            return operator(expression[function])
        resolved = self._resolve(expression)
        if isinstance(resolved, bool | str):
            return _as_bool(resolved)
        raise UnresolvableError(f"not a condition: {expression!r}")

    def _condition_operators(self) -> dict[str, Callable[[Any], bool]]:
        return {
            "Condition": self.condition,
            "Fn::Equals": lambda sides: (
                str(self._resolve(sides[0])) == str(self._resolve(sides[1]))
            ),
            "Fn::Not": lambda operands: not self._truth(operands[0]),
            "Fn::And": lambda operands: all(self._truth(operand) for operand in operands),
            "Fn::Or": lambda operands: any(self._truth(operand) for operand in operands),
        }


def _as_bool(value: bool | str) -> bool:
    return value if isinstance(value, bool) else value.lower() == "true"


def _intrinsic_name(value: dict[str, Any], *, condition_allowed: bool = False) -> str | None:
    if len(value) != 1:
        return None
    (key,) = value
    if key == "Ref" or key.startswith("Fn::") or (condition_allowed and key == "Condition"):
        return key
    return None


def stringify(value: Any) -> str:
    """How CloudFormation turns a scalar into a string property (env vars, tags)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)
