"""How every command prints: rich tables for people, the same fields as JSON with --json.

Nothing is ever cut: values that must stay whole (ids, tokens) fold onto more lines on a
terminal, and when stdout is not a terminal the tables are as wide as their longest cell.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

# Wide enough for any cell we print (a token is at most a few kilobytes): a pipe gets it whole.
_UNLIMITED_WIDTH = 100_000


def json_option[F: Callable[..., Any]](command: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the same fields as JSON (for scripts)."
    )(command)


def console() -> Console:
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, width=_UNLIMITED_WIDTH, no_color=True)


def print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False, default=str))


def table(*columns: str, title: str | None = None, numeric: tuple[str, ...] = ()) -> Table:
    """Numbers right-aligned; every other column folds instead of cutting its text."""
    grid = Table(title=title)
    for column in columns:
        if column in numeric:
            grid.add_column(column, justify="right", no_wrap=True)
        else:
            grid.add_column(column, overflow="fold")
    return grid


def cell(value: Any) -> Text:
    """A value as a table shows it: numbers right-aligned, mappings as key=value, None as -."""
    if isinstance(value, bool):
        return Text(str(value).lower())
    if isinstance(value, int | float):
        return Text(_number(value), justify="right")
    if isinstance(value, Mapping):
        return Text(key_values(value))
    if value is None:
        return Text("-")
    return Text(str(value))


def key_values(mapping: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={_plain(value)}" for key, value in mapping.items())


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return _number(value)
    return str(value)


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def timestamp(epoch: float) -> str:
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def when(epoch: float, now: float) -> str:
    """'2026-01-01 10:00:00 UTC (3 min ago)' or '(in 2 min)'."""
    return f"{timestamp(epoch)} ({relative(epoch, now)})"


def relative(epoch: float, now: float) -> str:
    delta = now - epoch
    if abs(delta) < 1:
        return "now"
    span = duration(abs(delta))
    return f"{span} ago" if delta > 0 else f"in {span}"


def duration(seconds: float) -> str:
    """A span in its largest two units: '45 s', '3 min', '2 h 5 min', '3 d 4 h'."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min" + (f" {secs} s" if secs and minutes < 10 else "")
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    days, hours = divmod(hours, 24)
    return f"{days} d" + (f" {hours} h" if hours else "")
