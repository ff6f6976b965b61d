"""The evidence set's unit: a table that states its denominators and what produced it.

A table with nothing behind it keeps its place in the report and says which command would fill
it (``empty``); a table whose rows come from scripted world policies says it is a simulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_RUNS = "no runs in this store"


@dataclass(frozen=True)
class Bar:
    """One bar of a figure: a label, a value and an optional interval."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Bubble:
    """One cell of a bubble matrix: area follows ``rate`` (0–1)."""

    row: str
    column: str
    rate: float


@dataclass(frozen=True)
class Figure:
    """What the renderer draws as a PNG beside a table: bars with intervals, or a bubble matrix."""

    ylabel: str
    bars: list[Bar] = field(default_factory=list)
    bubbles: list[Bubble] = field(default_factory=list)


@dataclass(frozen=True)
class Table:
    """One table of the evidence set.

    ``key`` names its CSV and PNG; ``denominator`` says what every rate or mean is over;
    ``source`` names the model(s) or policy(ies) behind the rows; ``simulation`` marks rows from
    scripted policies; ``empty`` (set only when there are no rows) says how to produce them.
    """

    key: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    denominator: str
    source: str
    simulation: bool = False
    empty: str | None = None
    figure: Figure | None = None

    def as_json(self) -> dict[str, Any]:
        """The table for machines: rows as column → cell mappings."""
        return {
            "key": self.key,
            "title": self.title,
            "denominator": self.denominator,
            "source": self.source,
            "simulation": self.simulation,
            "empty": self.empty,
            "columns": self.columns,
            "rows": [dict(zip(self.columns, r, strict=True)) for r in self.rows],
        }


def placeholder(key: str, title: str, columns: list[str], denominator: str, command: str) -> Table:
    """The table as it stands with nothing behind it: kept, and saying how to fill it."""
    return Table(
        key,
        title,
        columns,
        [],
        denominator,
        "none",
        empty=f"{NO_RUNS}; produce them with `{command}`",
    )
