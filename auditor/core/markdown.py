"""Markdown tables, written one way for every document that has them (the audit report, a repair's
PR description, the evidence set, the relabelling packets).

Cells arrive formatted and escaped: each document has its own rule for what a cell may hold
(trace text, JSON values, identifiers), so the caller applies it and the writer only lays out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """The table's lines: the header, the separator, then one line a row."""
    lines = [_line(columns), "|" + "---|" * len(columns)]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row of {len(row)} cells under {len(columns)} columns: {row!r}")
        lines.append(_line(row))
    return lines


def _line(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"
