"""The whole stack on one machine, against moto: `python -m infra.local serve`.

Python API: LocalStack(LocalOptions(...)) with start() -> ReadyInfo and stop(), or as a context
manager; invoke(), set_gateway(), set_faults(), calls_report() mirror the control API.
"""

from infra.local.lambda_.pool import Invocation
from infra.local.runtime.calls import AwsCall
from infra.local.runtime.faults import FaultRule
from infra.local.stack import LocalOptions, LocalStack, ReadyInfo

__all__ = ["AwsCall", "FaultRule", "Invocation", "LocalOptions", "LocalStack", "ReadyInfo"]
