"""How the CLI prints: relative times, numbers, extras, and nothing cut when piped."""

from __future__ import annotations

import io

import click
import pytest
from click.testing import CliRunner
from rich.console import Console

from pingback_guard_cli import main, queues
from pingback_guard_cli.main import cli
from pingback_guard_cli.output import cell, console, duration, key_values, relative, table

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (NOW - 48, "48 s ago"),
        (NOW - 180, "3 min ago"),
        (NOW + 120, "in 2 min"),
        (NOW + 604_752, "in 6 d 23 h"),
        (NOW - 3 * 3600 - 300, "3 h 5 min ago"),
        (NOW - 0.4, "now"),
    ],
)
def test_relative_times_read_as_words(moment: float, expected: str) -> None:
    assert relative(moment, NOW) == expected


def test_durations_keep_seconds_only_while_they_matter() -> None:
    assert (duration(59), duration(61), duration(660), duration(3600)) == (
        "59 s",
        "1 min 1 s",
        "11 min",
        "1 h",
    )


def test_numbers_are_right_aligned_and_extras_are_key_value_pairs() -> None:
    assert cell(12345).justify == "right" and str(cell(12345)) == "12,345"
    assert str(cell(0.75)) == "0.75"
    extras = {"version": "v3", "action": "login", "min_score": 0.7, "invisible": True}
    assert key_values(extras) == "version=v3 action=login min_score=0.7 invisible=true"
    assert str(cell(extras)) == key_values(extras)


def test_a_long_value_is_printed_whole_when_stdout_is_not_a_terminal(capsys) -> None:
    token = "03AGdBq2" + "x" * 2_266
    grid = table("attribute", "value")
    grid.add_row("solution", token)
    console().print(grid)
    assert token in capsys.readouterr().out


def test_a_peek_on_a_narrow_terminal_shows_each_message_id_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    message_id = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    fields = {"kind": "callback", "task_id": "75432198765", "reason": "table unavailable"}
    found = queues.Peek(1, 0, 5, [queues.PeekedMessage(message_id, 2, NOW, fields)])
    screen = io.StringIO()
    monkeypatch.setattr(main, "console", lambda: Console(file=screen, width=70, highlight=False))
    main._print_peek("dead-letter", found, as_json=False)
    # The first column's lines, folded or not, put back together.
    rows = [line for line in screen.getvalue().splitlines() if line.startswith("│")]
    first_column = [row.split("│")[1].strip() for row in rows]
    assert message_id in "".join(first_column)


def leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += leaf_commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def test_version_and_every_command_has_json() -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["--version"])
    assert shown.exit_code == 0 and shown.output.startswith("pingback-guard, version ")
    commands = leaf_commands(cli)
    assert ("task", "show") in commands and ("secret", "retire") in commands
    for command in commands:
        help_text = runner.invoke(cli, [*command, "--help"]).output
        assert "--json" in help_text, command


def test_the_exit_codes_are_in_the_help() -> None:
    help_text = CliRunner().invoke(cli, ["--help"]).output
    assert "8 the command worked and found something that needs attention" in " ".join(
        help_text.split()
    )
