"""The forms Lambda's FunctionName takes (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html):
a name, an ARN (arn:aws:lambda:region:account:function:name) or a partial ARN
(account:function:name), each with an optional version or alias after one more colon. No imports
of the runtime: the workers' IAM mapping reads it too (infra/local/iam/calls.py)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class FunctionName:
    name: str
    qualifier: str | None
    region: str | None
    """Only an ARN names it."""
    account: str | None
    """An ARN or a partial ARN names it."""


def parse_function_name(function_name: str) -> FunctionName:
    fields = function_name.split(":")
    if function_name.startswith("arn:"):
        region, account, rest = fields[3], fields[4], fields[6:]
    elif ":function:" in function_name:
        region, account, rest = None, fields[0], fields[2:]
    else:
        region, account, rest = None, None, fields
    return FunctionName(rest[0], rest[1] if len(rest) > 1 else None, region, account)
