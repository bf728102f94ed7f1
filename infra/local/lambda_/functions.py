"""What the runtime needs to run each function, read from the deployed stack."""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from infra.local.cloudformation.deploy import DeployedStack
from infra.local.cloudformation.intrinsics import stringify
from infra.local.cloudformation.template import TemplateError

LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3
LAMBDA_DEFAULT_MEMORY_MB = 128


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    function_name: str
    arn: str
    handler: str
    runtime: str
    code_dir: Path
    timeout_seconds: float
    memory_mb: int
    environment: Mapping[str, str]
    """Exactly the variables the template gives the function (Globals merged), resolved."""
    role_arn: str
    """Its execution role (Role): every AWS call it makes is authorized as this role."""


def function_specs(stack: DeployedStack, code_dirs: Mapping[str, Path]) -> dict[str, FunctionSpec]:
    specs: dict[str, FunctionSpec] = {}
    for logical_id, definition in stack.resources_of_type("AWS::Lambda::Function"):
        properties = stack.resolver.resolve(definition.get("Properties", {}))
        runtime = str(properties.get("Runtime", ""))
        if not runtime.startswith("python") or "Handler" not in properties:
            raise TemplateError(f"{logical_id}: only Python zip functions run locally ({runtime})")
        if logical_id not in code_dirs:
            raise TemplateError(f"{logical_id}: no local CodeUri (declare it as a SAM function)")
        variables = properties.get("Environment", {}).get("Variables", {})
        specs[logical_id] = FunctionSpec(
            logical_id=logical_id,
            function_name=stack.resources.physical_id(logical_id),
            arn=str(stack.resources.attribute(logical_id, "Arn")),
            handler=str(properties["Handler"]),
            runtime=runtime,
            code_dir=code_dirs[logical_id],
            timeout_seconds=float(properties.get("Timeout", LAMBDA_DEFAULT_TIMEOUT_SECONDS)),
            memory_mb=int(properties.get("MemorySize", LAMBDA_DEFAULT_MEMORY_MB)),
            environment={name: stringify(value) for name, value in variables.items()},
            role_arn=str(properties.get("Role", "")),
        )
    return specs
