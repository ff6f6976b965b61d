"""Write the evidence set: one ``evidence.md``, one CSV per table, one PNG per figure, all or nothing.

Everything is written into a temporary folder beside ``out`` and moved into place at the end, so
a failure never leaves a half-written evidence set (an earlier set stays until the new one is whole).
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path

from auditor.core.markdown import markdown_table
from auditor.surfaces.evidence_report.table import Figure, Table

SIMULATION_NOTE = (
    "**Simulation.** Rows from scripted policies replay seeded behaviour observed in such agents; "
    "they are simulations, not measurements of any model."
)


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown(tables: list[Table], store_url: str) -> str:
    """The whole evidence set as one Markdown document, tables in registry order."""
    lines = [
        "# Evidence report",
        "",
        f"Regenerated from the event store `{store_url}`. Every table states its denominators and the "
        "model or policy behind it; a table with nothing behind it says which command would fill it.",
        "",
    ]
    for t in tables:
        lines += [f"## {t.title}", "", f"- Denominator: {t.denominator}", f"- Source: {t.source}", ""]
        if t.simulation and t.empty is None:
            lines += [SIMULATION_NOTE, ""]
        if t.empty is not None:
            lines += [f"_{t.empty}._", ""]
            continue
        cells = [[_cell(str(v)) for v in row] for row in t.rows]
        lines += [*markdown_table([_cell(c) for c in t.columns], cells), ""]
        if not t.rows:
            lines += ["_The runs behind this table hold no rows for it._", ""]
        lines += [f"CSV: `{t.key}.csv`" + (f" · figure: `{t.key}.png`" if t.figure else ""), ""]
        if t.figure:
            lines += [f"![{t.title}]({t.key}.png)", ""]
    return "\n".join(lines)


def write_csv(table: Table, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(table.columns)
        writer.writerows(table.rows)


def write_png(figure: Figure, path: Path, title: str) -> None:
    """Bars with their intervals, or a bubble matrix whose areas follow the rates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if figure.bubbles:
        rows = sorted({b.row for b in figure.bubbles})
        columns = list(dict.fromkeys(b.column for b in figure.bubbles))
        fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(columns)), max(3, 0.6 * len(rows) + 1.5)))
        ax.scatter(
            [columns.index(b.column) for b in figure.bubbles],
            [rows.index(b.row) for b in figure.bubbles],
            s=[20 + 1200 * b.rate for b in figure.bubbles],
            color="#4a7ab5",
            alpha=0.7,
        )
        ax.set_xticks(range(len(columns)), columns)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_xlim(-0.5, len(columns) - 0.5)
        ax.set_ylim(-0.5, len(rows) - 0.5)
    else:
        bars = figure.bars
        fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(bars)), 4))
        values = [b.value for b in bars]
        errs = [
            [b.value - b.low if b.low is not None else 0 for b in bars],
            [b.high - b.value if b.high is not None else 0 for b in bars],
        ]
        ax.bar(range(len(bars)), values, yerr=errs, capsize=3, color="#4a7ab5")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(bars)), [b.label for b in bars], fontsize=7, rotation=90)
    ax.set_ylabel(figure.ylabel)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_evidence(tables: list[Table], out: Path, store_url: str) -> list[Path]:
    """Write the set into a fresh folder beside ``out`` and move it into place; returns the files written."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (staging / "evidence.md").write_text(markdown(tables, store_url) + "\n", encoding="utf-8")
        for t in tables:
            write_csv(t, staging / f"{t.key}.csv")
            if t.figure is not None:
                write_png(t.figure, staging / f"{t.key}.png", t.title)
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(old / out.name)
        staging.rename(out)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(out.iterdir())
