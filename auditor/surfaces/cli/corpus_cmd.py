"""`auditor corpus sample DIR`: draw and freeze a label-blind, stratified audit sample of a corpus."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import console, open_cli_store, print_json, print_table

corpus_app = typer.Typer(help="Work with whole corpora (MAST/MAD).", no_args_is_help=True)


@corpus_app.command("sample")
def sample(
    root: Path = typer.Argument(..., help="Folder holding MAD-shaped corpus files."),
    per_stratum: int = typer.Option(..., "--per-stratum", help="Cases per framework-by-benchmark stratum."),
    seed: int = typer.Option(..., "--seed", help="Seed of the label-blind shuffle."),
    held_out: Path = typer.Option(None, "--held-out", help="Labelled file whose traces are excluded."),
    total: int = typer.Option(None, "--total", help="Stop after this many cases overall."),
    out: Path = typer.Option(None, "--out", help="Also write the manifest to this JSON file."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole manifest."),
) -> None:
    """Exclude duplicates and held-out traces, draw round-robin per stratum, freeze by digest (an event)."""
    from ingest.sampling import freeze, sample_corpus

    if not root.is_dir():
        raise InputError("not a folder", path=str(root), hint="pass the folder that holds the corpus files")
    manifest = sample_corpus(root, per_stratum, seed, held_out, total)
    stream, new = freeze(open_cli_store(), manifest)
    if out is not None:
        out.write_text(json.dumps(manifest, indent=1) + "\n")
    if as_json:
        print_json({**manifest, "stream": stream, "new": new})
        return
    c = manifest["counts"]
    print_table(
        f"{c['drawn']} cases from {c['candidates']} candidates",
        ["stratum", "candidates", "drawn"],
        [[k, v["candidates"], v["drawn"]] for k, v in manifest["strata"].items()],
    )
    console.print(
        f"excluded: {c['duplicates']} duplicates, {c['held_out']} held-out; manifest {manifest['digest']} "
        f"{'frozen in' if new else 'already frozen in'} {stream}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(corpus_app, name="corpus")
