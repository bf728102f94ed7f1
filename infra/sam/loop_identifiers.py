"""Refuse a Fn::ForEach loop identifier written where the transform leaves it as typed.

AWS::LanguageExtensions writes a loop's element into keys, Fn::Sub strings and Ref, as cfn-lint's
model of the transform does (infra/local/cloudformation/language_extensions.py uses it); a
"${Id}" or "&{Id}" in any other string reaches the deployed resource literally (a metric filter
pattern "* /${Route}.php" then matches nothing). Every value that varies with the loop is written
as a Fn::Sub or a Ref in the Fn::ForEach page's examples:
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-foreach.html

    python -m infra.sam.loop_identifiers [TEMPLATE]    (exit 1 and one line per misplaced use)
"""

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from infra.local.cloudformation.cfn_yaml import CfnYamlError, read_cfn_yaml
from infra.local.cloudformation.language_extensions import FOR_EACH_PREFIX
from infra.project_template import TEMPLATE_PATH

# Where the transform writes the element: the string of a Fn::Sub (its first item in the list
# form), and the name a Ref is given. Keys are handled where they are walked.
_SUBSTITUTED = frozenset({"Fn::Sub", "Ref"})


def misplaced_identifiers(document: dict[str, Any]) -> list[str]:
    """One line per plain string holding the identifier of a loop it stands in."""
    return list(_walk(document, "", ()))


def _walk(value: Any, where: str, identifiers: tuple[str, ...]) -> Iterator[str]:
    if isinstance(value, str):
        yield from _in_plain_string(value, where, identifiers)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{where}[{index}]", identifiers)
    elif isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if str(key).startswith(FOR_EACH_PREFIX):
                yield from _loop(item, inner, identifiers)
            elif key in _SUBSTITUTED:
                yield from _substituted(key, item, inner, identifiers)
            else:
                yield from _walk(item, inner, identifiers)


def _loop(arguments: Any, where: str, identifiers: tuple[str, ...]) -> Iterator[str]:
    if isinstance(arguments, list) and len(arguments) == 3 and isinstance(arguments[0], str):
        yield from _walk(arguments[1], f"{where}[1]", identifiers)
        yield from _walk(arguments[2], f"{where}[2]", (*identifiers, arguments[0]))


def _substituted(function: str, argument: Any, where: str, ids: tuple[str, ...]) -> Iterator[str]:
    if isinstance(argument, str):
        return
    if function == "Fn::Sub" and isinstance(argument, list) and argument:
        head, *rest = argument
        if not isinstance(head, str):
            yield from _walk(head, f"{where}[0]", ids)
        for index, item in enumerate(rest, start=1):
            yield from _walk(item, f"{where}[{index}]", ids)
        return
    yield from _walk(argument, where, ids)


def _in_plain_string(text: str, where: str, identifiers: tuple[str, ...]) -> Iterator[str]:
    for identifier in identifiers:
        if re.search(rf"[$&]\{{{re.escape(identifier)}\}}", text):
            yield (
                f"{where}: loop identifier {identifier} in a plain string {text!r}: the transform"
                " writes it only into keys, Fn::Sub and Ref (use !Sub)"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("template", type=Path, nargs="?", default=TEMPLATE_PATH)
    arguments = parser.parse_args(argv)
    try:
        problems = misplaced_identifiers(read_cfn_yaml(arguments.template))
    except CfnYamlError as unreadable:
        print(f"loop identifiers: {unreadable}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"{arguments.template}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
