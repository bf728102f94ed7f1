"""docs/operations.md's least-privilege table, written from template.yaml's function roles, so the
page says what the roles grant (tests/template/test_docs.py fails when the two differ).

Each row is one statement of a `<Name>FunctionRole` (the log-group and X-Ray statements every role
has are said once above the table): its Sid, its actions, and what it acts on.

    python -m infra.sam.least_privilege            (print the table)
    python -m infra.sam.least_privilege --write    (replace it in docs/operations.md)
"""

import argparse
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from infra.local.cloudformation.cfn_yaml import load_cfn_yaml
from infra.project_template import TEMPLATE_PATH

OPERATIONS_DOC = TEMPLATE_PATH.parent / "docs" / "operations.md"
BEGIN = "<!-- least-privilege table: python -m infra.sam.least_privilege --write -->"
END = "<!-- end of the least-privilege table -->"
ROLE_SUFFIX = "FunctionRole"
# Said once above the table: every function writes its own log group and sends traces.
EVERY_ROLE_PREFIXES = ("logs:", "xray:")
_ARN_PREFIX = re.compile(
    r"^arn:\$\{AWS::Partition\}:[a-z0-9-]+:\$\{AWS::Region\}:\$\{AWS::AccountId\}:"
)
_ATTRIBUTE = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}")
_VARIABLE = re.compile(r"\$\{([A-Za-z0-9:]+)\}")


def least_privilege_table(template: Mapping[str, Any]) -> str:
    rows = ["| function | statement | may do | on |", "|---|---|---|---|"]
    for logical_id, role in template["Resources"].items():
        if role["Type"] == "AWS::IAM::Role" and logical_id.endswith(ROLE_SUFFIX):
            function = logical_id.removesuffix(ROLE_SUFFIX)
            if "Condition" in role:
                function += f" (if `{role['Condition']}`)"
            rows.extend(_rows(function, role["Properties"]))
    return "\n".join(rows)


def _rows(function: str, properties: Mapping[str, Any]) -> Iterator[str]:
    for policy in properties.get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = _as_list(statement["Action"])
            if all(str(action).startswith(EVERY_ROLE_PREFIXES) for action in actions):
                continue
            effect = "" if statement["Effect"] == "Allow" else f"**{statement['Effect']}** "
            on = ", ".join(f"`{_resource(item)}`" for item in _as_list(statement["Resource"]))
            conditions = sorted(
                key for operator in statement.get("Condition", {}).values() for key in operator
            )
            if conditions:
                on += " if " + ", ".join(f"`{key}`" for key in conditions)
            allowed = ", ".join(f"`{action}`" for action in actions)
            yield f"| {function} | {statement.get('Sid', '')} | {effect}{allowed} | {on} |"


def _resource(resource: Any) -> str:
    """A resource as the reader knows it: the logical id, or an ARN's own part."""
    if isinstance(resource, str):
        return resource
    if "Ref" in resource:
        return str(resource["Ref"])
    if "Fn::GetAtt" in resource:
        return str(resource["Fn::GetAtt"][0])
    text = resource["Fn::Sub"]
    text = _ARN_PREFIX.sub("", text if isinstance(text, str) else text[0])
    return _VARIABLE.sub(r"{\1}", _ATTRIBUTE.sub(r"\1", text))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def documented_table(text: str) -> str:
    """The table between the markers of docs/operations.md."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help=f"replace it in {OPERATIONS_DOC}")
    arguments = parser.parse_args(argv)
    table = least_privilege_table(load_cfn_yaml(TEMPLATE_PATH))
    if not arguments.write:
        print(table)
        return 0
    text = OPERATIONS_DOC.read_text(encoding="utf-8")
    written = text.replace(documented_table(text), table, 1)
    OPERATIONS_DOC.write_text(written, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
