"""Write template.yaml as CloudFormation deploys it: after AWS::LanguageExtensions (Fn::ForEach)
and the SAM transform, the document the local twin also deploys.

`make template-check` lints this output with cfn-lint: the linter then checks every resource
against the CloudFormation resource schemas it ships, as the resource types AWS creates
(AWS::Lambda::Function, not AWS::Serverless::Function), which catches what a lint of the SAM
template misses (a Lambda Description over 256 characters, E3033).

    python -m infra.sam.transformed_template OUT.json [--parameter-overrides Name=Value ...]
"""

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from infra.local.cloudformation.template import SamTemplate, TemplateError
from infra.project_template import PLACEHOLDER_REGION, TEMPLATE_PATH


def transformed_document(
    template_path: Path, overrides: Mapping[str, str], region: str = PLACEHOLDER_REGION
) -> dict[str, Any]:
    """The CloudFormation the two transforms make of the template, with these parameters."""
    template = SamTemplate.load(template_path)
    return template.translate(template.parameter_values(overrides), region)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="where to write the transformed template (JSON)")
    parser.add_argument("--template", type=Path, default=TEMPLATE_PATH)
    parser.add_argument("--parameter-overrides", nargs="*", default=[], metavar="NAME=VALUE")
    arguments = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in arguments.parameter_overrides)
    try:
        document = transformed_document(arguments.template, overrides)
    except TemplateError as refused:
        print(f"transformed template: {refused}", file=sys.stderr)
        return 1
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
