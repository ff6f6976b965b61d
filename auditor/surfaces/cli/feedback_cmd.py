"""`auditor feedback export|precision`: the labels reviewers gave findings (confirmed or dismissed,
from the console or `POST /api/reports/{id}/findings/{finding}/feedback`), read from the store."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer

from auditor.surfaces.cli.common import (
    err_console,
    open_cli_store,
    output_target,
    print_json,
    print_table,
    write_atomic,
)

feedback_app = typer.Typer(
    help="Reviewers' labels on findings: a dataset, and each detector's precision.", no_args_is_help=True
)


# Line breaks to Unicode that JSON leaves raw in a string: a reader splitting on them (Python's
# str.splitlines) would cut one record in two
_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})


def _jsonl_line(record: dict) -> str:
    """One record as one line of JSONL, whatever its strings hold (a quote from a trace, a reason
    pasted from a document)."""
    return json.dumps(record, ensure_ascii=False).translate(_BREAKS) + "\n"


@feedback_app.command("export")
def export(
    out: Path = typer.Option(Path("-"), "--out", "-o", help="JSONL file to write ('-': standard output)."),
) -> None:
    """Write each labelled finding, one JSON object a line: the finding as filed, its evidence
    quotes, the latest label, who gave it, when and why. The file is written whole or not at all."""
    from auditor.audit.feedback import dataset

    if str(out) != "-":
        output_target(out)  # refused before the store is read
    rows = list(dataset(open_cli_store()))
    write_atomic(out, "".join(_jsonl_line(r) for r in rows))
    err_console.print(
        f"{len(rows)} labelled findings written to {'standard output' if str(out) == '-' else out}"
    )


@feedback_app.command("precision")
def precision(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Each detector's confirmed and dismissed findings (by their latest label) and its precision."""

    from auditor.audit.feedback import latest_labels, precision_by_detector

    tally = Counter((p["detector"], p["label"]) for p in latest_labels(open_cli_store()))
    rows = precision_by_detector((d, label, n) for (d, label), n in tally.items())
    if as_json:
        print_json([{**r.__dict__, "precision": r.precision} for r in rows])
        return
    print_table(
        f"{len(rows)} detectors with labelled findings",
        ["detector", "confirmed", "dismissed", "precision"],
        [
            [r.detector, r.confirmed, r.dismissed, "—" if r.precision is None else f"{r.precision:.2f}"]
            for r in rows
        ],
    )


def register(app: typer.Typer) -> None:
    app.add_typer(feedback_app, name="feedback")
