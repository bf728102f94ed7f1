"""The whole stack on one machine, against moto: `python -m infra.local serve`.

Python API: LocalStack(LocalOptions(...)) with start() -> ReadyInfo and stop(), or as a context
manager; invoke(), set_gateway(), set_faults(), calls_report() mirror the control API.

The names are imported on first use: every function worker imports this package (its modules
live in it), and a worker needs none of the stack's own parts (the SAM translator, moto's
client, the gateway).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.local.lambda_.pool import Invocation
    from infra.local.options import LocalOptions, ReadyInfo
    from infra.local.runtime.calls import AwsCall
    from infra.local.runtime.faults import FaultRule
    from infra.local.stack import LocalStack

_MODULE_OF = {
    "AwsCall": "infra.local.runtime.calls",
    "FaultRule": "infra.local.runtime.faults",
    "Invocation": "infra.local.lambda_.pool",
    "LocalOptions": "infra.local.options",
    "LocalStack": "infra.local.stack",
    "ReadyInfo": "infra.local.options",
}

__all__ = ["AwsCall", "FaultRule", "Invocation", "LocalOptions", "LocalStack", "ReadyInfo"]


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)
