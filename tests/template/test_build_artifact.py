"""What `sam build` ships: every function built from functions/ goes through functions/Makefile,
which compiles the artifact to bytecode a read-only /var/task can use as it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import FUNCTIONS_DIR, at_cold_start, template

# Imports the handler without writing bytecode, as on a read-only /var/task, and names every
# module under the working directory the import system had to compile from source.
COMPILED_AT_IMPORT = (
    "import importlib, importlib._bootstrap_external as external, json, os, sys\n"
    "compiled = []\n"
    "to_code = external.SourceLoader.source_to_code\n"
    "def recording(self, data, path, *, _optimize=-1):\n"
    "    compiled.append(os.path.relpath(path))\n"
    "    return to_code(self, data, path, _optimize=_optimize)\n"
    "external.SourceLoader.source_to_code = recording\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(json.dumps([path for path in compiled if not path.startswith('..')]))\n"
)


def functions_built_from_the_shared_code() -> dict[str, dict[str, Any]]:
    resources = template()["Resources"]
    return {
        logical_id: resource
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
        and "CodeUri" not in resource["Properties"]
    }


def test_every_function_of_the_shared_code_is_built_by_its_makefile() -> None:
    functions = functions_built_from_the_shared_code()

    assert template()["Globals"]["Function"]["CodeUri"] == "functions/"
    assert len(functions) >= 10
    assert {
        logical_id: resource.get("Metadata", {}).get("BuildMethod")
        for logical_id, resource in functions.items()
    } == dict.fromkeys(functions, "makefile")


# The interpreter `build-%` is given: records a pip call (its arm64 wheels need the package
# index: `sam build` runs it, not this test) and runs everything else with this interpreter.
PYTHON_STAND_IN = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> "{calls}"; exit 0; fi
exec "{python}" "$@"
"""


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the `build-<id>` rule `sam build` runs lays out and compiles, run through that rule."""
    target = tmp_path_factory.mktemp("artifact")
    tools = tmp_path_factory.mktemp("tools")
    pip_calls = tools / "pip-calls"
    python = tools / "python"
    python.write_text(PYTHON_STAND_IN.format(calls=pip_calls, python=sys.executable))
    python.chmod(0o755)
    subprocess.run(
        ["make", "--no-print-directory", "build-SubmitFunction"],
        cwd=FUNCTIONS_DIR,
        env={"PATH": "/usr/bin:/bin", "ARTIFACTS_DIR": str(target), "PYTHON": str(python)},
        check=True,
        capture_output=True,
        timeout=120,
    )
    # The rule installs the runtime dependencies for arm64 Lambda too.
    (call,) = pip_calls.read_text().splitlines()
    assert "--requirement requirements.txt" in call
    assert "--platform manylinux2014_aarch64" in call
    return target


def test_the_artifact_holds_checked_bytecode_for_every_module(artifact: Path) -> None:
    sources = sorted(artifact.rglob("*.py"))
    tag = sys.implementation.cache_tag

    assert sources
    for source in sources:
        cached = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        flags = int.from_bytes(cached.read_bytes()[4:8], "little")
        assert flags == 0b11, f"{cached}: not checked-hash bytecode"
    # Only this interpreter's bytecode: the test runs' own caches are not shipped.
    assert {path.name.split(".")[1] for path in artifact.rglob("*.pyc")} == {tag}


@pytest.mark.parametrize("logical_id", ["SubmitFunction", "GetTaskFunction", "CallbackFunction"])
def test_a_cold_start_from_the_artifact_compiles_nothing(artifact: Path, logical_id: str) -> None:
    assert at_cold_start(COMPILED_AT_IMPORT, logical_id, artifact, "-B") == []
