"""What a benchmark section hands back: headline figures, details, and data for results.json."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

MEASURED = "measured"
FAILED = "failed"


@dataclass
class Headline:
    figure: str
    value: str
    target: str = ""
    met: bool | None = None

    @property
    def verdict(self) -> str:
        if self.met is None:
            return ""
        return "met" if self.met else "MISSED"


@dataclass
class SectionOutcome:
    key: str
    title: str
    status: str = MEASURED
    note: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    headlines: list[Headline] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    """Markdown lines."""

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "status": self.status,
            "note": self.note,
            "headlines": [asdict(headline) for headline in self.headlines],
            "data": self.data,
        }


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = [_row(header), _row(["---"] * len(header))]
    lines.extend(_row([str(cell) for cell in row]) for row in rows)
    return lines


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def number(value: float, digits: int = 2) -> str:
    """A count stays a count; a ratio keeps `digits` decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error as one short line for a report."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
