"""The limits AWS's API applies to a request the twin makes itself, read from botocore's model.

moto takes values AWS refuses (an AlarmDescription over 1024 characters, a Period of 0): when the
twin creates a resource by API, each parameter is checked against its shape in botocore's
service model (the `min`, `max` and `enum` AWS publishes for it), so the limit comes from the
maintained model, never from a list kept here. botocore itself checks types and a string's
`min` only.
"""

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import botocore.session
from botocore.model import OperationModel, ServiceModel, Shape

from infra.local.cloudformation.template import TemplateError

_BEFORE_PARAMETER_BUILD = "before-parameter-build"


def refusing_out_of_limits(client: Any) -> Any:
    """The client, made to raise TemplateError for a request its model says AWS refuses."""
    client.meta.events.register(_BEFORE_PARAMETER_BUILD, _check)
    return client


def length_limit(service: str, operation: str, member: str) -> int | None:
    """The most characters the operation takes in a top-level string parameter, if bounded."""
    shape = _service_model(service).operation_model(operation).input_shape
    limit = shape.members[member].metadata.get("max") if shape is not None else None
    return None if limit is None else int(limit)


@cache
def _service_model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def out_of_limits(model: OperationModel, params: Mapping[str, Any]) -> list[str]:
    """Each parameter of the request outside what the operation's input shape allows."""
    if model.input_shape is None:
        return []
    return list(_violations(model.input_shape, params, model.name))


def _check(params: Mapping[str, Any], model: OperationModel, **_: Any) -> None:
    problems = out_of_limits(model, params)
    if problems:
        service = model.service_model
        raise TemplateError(
            f"{service.service_name} {model.name} would refuse it: {'; '.join(problems)}"
            f" (botocore's {service.service_name} {service.api_version} model)"
        )


def _violations(shape: Shape, value: Any, path: str) -> Iterator[str]:
    metadata = shape.metadata
    if shape.type_name == "structure" and isinstance(value, Mapping):
        for name, item in value.items():
            member = shape.members.get(name)  # type: ignore[attr-defined]
            if member is not None:
                yield from _violations(member, item, f"{path}.{name}")
    elif shape.type_name == "list" and isinstance(value, list):
        yield from _range(path, "items", len(value), metadata)
        for index, item in enumerate(value):
            yield from _violations(shape.member, item, f"{path}[{index}]")  # type: ignore[attr-defined]
    elif shape.type_name == "map" and isinstance(value, Mapping):
        yield from _range(path, "entries", len(value), metadata)
        for key, item in value.items():
            yield from _violations(shape.value, item, f"{path}.{key}")  # type: ignore[attr-defined]
    elif shape.type_name == "string" and isinstance(value, str):
        yield from _range(path, "characters", len(value), metadata)
        allowed = shape.enum  # type: ignore[attr-defined]
        if allowed and value not in allowed:
            yield f"{path} {value!r} is not one of {allowed}"
    elif shape.type_name in ("integer", "long", "double", "float") and isinstance(
        value, int | float
    ):
        yield from _range(path, "", value, metadata)


def _range(path: str, unit: str, size: float, metadata: Mapping[str, Any]) -> Iterator[str]:
    counted = f"{size:g} {unit}".strip()
    if "min" in metadata and size < metadata["min"]:
        yield f"{path} has {counted}, at least {metadata['min']:g} allowed"
    if "max" in metadata and size > metadata["max"]:
        yield f"{path} has {counted}, at most {metadata['max']:g} allowed"
