"""The docs cannot drift quietly: every link and repository path they name exists, every
parameter docs/operations.md lists is a template parameter with the same default, and every
`pingback-guard` command they show is one the CLI's --help knows, with options it takes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest

from infra.project_template import function_memory_mb
from pingback_guard.kinds.registry import METHODS
from pingback_guard_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "packages").glob("*/README.md"),
        ROOT / "infra" / "local" / "README.md",
    ]
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A repository path in backticks: a top-level folder of the repository, then more segments.
TOP_LEVEL = ("docs", "tests", "infra", "functions", "packages", "bench", "examples", "events")
REPO_PATH = re.compile(rf"`((?:{'|'.join(TOP_LEVEL)})/[A-Za-z0-9_./*{{}}-]*)`")
# Written by runs, not committed (.gitignore).
GENERATED = ("out/", ".aws-sam/", ".venv", "bench/results.json")
CLI_CALL = re.compile(r"(?:^|[\s$(])pingback-guard((?:[ \t]+[^\s`|;&)#]+)*)")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
GLOBAL_OPTIONS_WITH_VALUE = {"-s", "--stack-name", "--region", "--profile", "--endpoint-url"}


def doc_ids() -> list[str]:
    return [str(path.relative_to(ROOT)) for path in DOCS]


@pytest.mark.parametrize("doc", DOCS, ids=doc_ids())
def test_every_relative_link_exists(doc: Path) -> None:
    missing = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not (doc.parent / path).exists():
            missing.append(target)
    assert not missing, f"{doc.name} links to missing {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=doc_ids())
def test_every_repository_path_named_exists(doc: Path) -> None:
    missing = []
    for named in REPO_PATH.findall(doc.read_text(encoding="utf-8")):
        if any(part in named for part in GENERATED) or "{" in named:
            continue
        pattern = named.rstrip("/")
        if not (list(ROOT.glob(pattern)) if "*" in pattern else (ROOT / pattern).exists()):
            missing.append(named)
    assert not missing, f"{doc.name} names missing {missing}"


def operations_parameters() -> dict[str, str]:
    """docs/operations.md's Parameters table: name -> default as written."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("\n## Parameters\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z0-9]+)` \| ([^|]*) \|", section, re.MULTILINE)
    return {name: default.strip() for name, default in rows}


def test_the_parameters_table_is_not_empty() -> None:
    assert len(operations_parameters()) > 20


@pytest.mark.parametrize("name", sorted(operations_parameters()))
def test_each_documented_parameter_has_the_template_s_default(
    template: dict[str, Any], name: str
) -> None:
    parameters = template["Parameters"]
    assert name in parameters, f"docs/operations.md lists {name}, the template has none"
    written = operations_parameters()[name]
    default = str(parameters[name].get("Default", ""))
    if default == "":
        assert written in ("empty", "(none)", "``", "none"), (name, written)
    else:
        assert written.strip("`") == default, (name, written, default)


def test_the_readme_quotes_the_reference_bench_run_it_names() -> None:
    """The README's figures name their run: its date, commit and duration are RESULTS.md's."""
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ran = re.search(
        r"^Run (\S+ \S+) UTC at commit `(\w+)`.*the whole run took (\d+) s", results, re.M
    )
    quoted_run = re.search(r"from the run of (\S+ \S+) UTC, commit\s+`(\w+)`", readme)
    quoted_time = re.search(r"the reference run in bench/RESULTS.md took (\d+) s", readme)
    assert ran and quoted_run and quoted_time, "the run's line or the README's quote changed form"
    assert (quoted_run[1], quoted_run[2], quoted_time[1]) == ran.groups()


def test_the_function_settings_operations_md_states_are_the_template_s(
    template: dict[str, Any],
) -> None:
    """Its "Every function:" paragraph: the shared memory and tracing, then each function that
    differs, named, with its own memory ("N MB") and "not traced" when it is not."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    paragraph = text.split("\nEvery function: ", 1)[1].split("\n\n", 1)[0].replace("\n", " ")
    shared = template["Globals"]["Function"]
    assert f"{shared['MemorySize']} MB" in paragraph.split(". Except:")[0]
    assert shared["Tracing"] == {"Ref": "Tracing"}
    assert "X-Ray tracing as the `Tracing` parameter says" in paragraph
    for name, body in template["Resources"].items():
        if body["Type"] != "AWS::Serverless::Function" or body["Properties"].get("CodeUri"):
            continue  # the example consumer, code from examples/, is documented with it
        own = {
            "MemorySize": function_memory_mb(template, name),
            "Tracing": body["Properties"].get("Tracing", shared["Tracing"]),
        }
        if own == {key: shared[key] for key in own}:
            assert f"`{name}`" not in paragraph, f"{name} has the shared settings"
            continue
        assert f"`{name}` (" in paragraph, f"{name} differs: {own}"
        clause = paragraph.split(f"`{name}` (", 1)[1].split(")", 1)[0]
        assert f"{own['MemorySize']} MB" in clause, (name, clause)
        assert ("not traced" in clause) == (own["Tracing"] != shared["Tracing"]), (name, clause)


KIND_DOCS = ("README.md", "docs/architecture.md", "docs/operations.md")


@pytest.mark.parametrize("doc", KIND_DOCS)
def test_the_kind_docs_name_every_in_php_method_and_every_lifetime_parameter(
    template: dict[str, Any], doc: str
) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    lifetimes = [name for name in template["Parameters"] if name.endswith("LifetimeSeconds")]
    missing = [name for name in [*METHODS, *lifetimes] if f"`{name}`" not in text]
    assert len(lifetimes) >= 5 and not missing, f"{doc} does not name {missing}"


def test_the_environment_table_names_every_lifetime_variable(template: dict[str, Any]) -> None:
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    lifetimes = [name for name in variables if name.endswith("LIFETIME_SECONDS")]
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [name for name in lifetimes if f"`{name}`" not in text]
    assert len(lifetimes) >= 5 and not missing, f"architecture.md does not name {missing}"


def code_in(text: str) -> list[str]:
    """The lines of fenced code blocks (continued lines joined) and each inline code span."""
    code: list[str] = []
    fenced = False
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            code.append(line)
        else:
            code.extend(INLINE_CODE.findall(line))
    return code


def listed_commands(text: str) -> list[str]:
    """Commands listed without the program name: the lines under a `pingback-guard [...]`
    synopsis in a code block (up to their description), and the headings naming commands."""
    listed: list[str] = []
    under_synopsis = False
    for line in text.splitlines():
        if line.startswith("pingback-guard ["):
            under_synopsis = True
        elif under_synopsis and re.match(r"  [a-z]", line):
            listed.append(re.split(r"\s{2,}", line.strip())[0])
        elif under_synopsis and not line.startswith(" "):
            under_synopsis = False
        if line.startswith("### `"):
            listed.extend(INLINE_CODE.findall(line))
    return listed


def shown_cli_calls() -> list[tuple[str, list[str]]]:
    calls = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        shown = [
            f"pingback-guard{arguments}"
            for line in code_in(text)
            for arguments in CLI_CALL.findall(line)
        ]
        shown += [f"pingback-guard {command}" for command in listed_commands(text)]
        for call in shown:
            words = call.replace("[", " ").replace("]", " ").replace("|", " ").split()[1:]
            calls.append((f"{doc.relative_to(ROOT)}: {call}", words))
    return calls


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words name, past the global options; the words left after it."""
    command: click.Command = cli
    rest = list(words)
    while rest:
        word = rest[0]
        if word in GLOBAL_OPTIONS_WITH_VALUE and command is cli:
            rest = rest[2:]
        elif word.startswith("-") or not isinstance(command, click.Group):
            break
        elif word in command.commands:
            command = command.commands[word]
            rest = rest[1:]
        else:
            break
    return command, rest


def test_the_docs_show_cli_calls() -> None:
    assert len(shown_cli_calls()) > 10


@pytest.mark.parametrize(("where", "words"), shown_cli_calls(), ids=lambda value: str(value)[:80])
def test_each_cli_call_shown_is_a_command_the_cli_knows(where: str, words: list[str]) -> None:
    command, rest = resolve(words)
    if command is cli:
        # `pingback-guard --help`, `--version`, or the synopsis line: global options only.
        assert all(w.startswith("-") or w.isupper() or w == "COMMAND" for w in rest), where
        return
    assert not isinstance(command, click.Group) or not rest or rest[0].startswith("-"), where
    known = {name for parameter in command.params for name in parameter.opts}
    known |= {"-h", "--help"}
    options = {word.split("=", 1)[0] for word in rest if word.startswith("-")}
    assert options <= known, f"{where}: unknown options {sorted(options - known)}"
