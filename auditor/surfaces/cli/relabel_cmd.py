"""`auditor score relabel`: the independent relabelling study — export packets, import answers, report.

A thin face over ``scoring.relabel``: files are written here, the study and every imported sheet
are events in stream ``relabel-<study>``, and the report is a projection of that stream (plus, with
``--run``, a stored coalition run whose shares are recomputed under the substituted labels).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from auditor.surfaces.cli.common import console, open_cli_store, print_json, print_table, write_atomic

if TYPE_CHECKING:
    from auditor.core.store import EventStore
    from scoring.relabel import Study

relabel_app = typer.Typer(
    help="Relabelling study: stratified packets for independent annotators, their answers, agreement.",
    no_args_is_help=True,
)
MANIFEST = "manifest.json"


@relabel_app.command("export")
def export(
    dataset: list[str] = typer.Option(..., "--dataset", help="Dataset name or .jsonl path (repeatable)."),
    per_stratum: int = typer.Option(
        ..., "--per-stratum", min=1, help="Targets per dataset × kind × label stratum."
    ),
    out: Path = typer.Option(..., "--out", help="Folder for the packets, answer sheets and manifest."),
    annotators: int = typer.Option(3, "--annotators", min=2, help="How many independent annotators."),
    seed: int = typer.Option(0, "--seed", help="Seed of the stratified draw."),
    study_id: str = typer.Option(None, "--study", help="Study id (default: from datasets, N and seed)."),
    sheet: str = typer.Option("csv", "--sheet", help="Answer-sheet format: csv or json."),
) -> None:
    """Write one packet file (JSON + Markdown) and one blank answer sheet per annotator, and record the study."""
    from auditor.core.errors import InputError
    from scoring.datasets import load_dataset
    from scoring.relabel import (
        blank_rows,
        draw_study,
        packet_file,
        packet_markdown,
        packet_view,
        sheet_csv,
        sheet_json,
        study_event,
        study_stream,
    )

    if sheet not in ("csv", "json"):
        raise InputError(f"unknown sheet format {sheet!r}", field="sheet", hint="csv or json")
    pools = {(Path(d).stem if d.endswith(".jsonl") else d): load_dataset(d) for d in dataset}
    names = [f"annotator-{i}" for i in range(1, annotators + 1)]
    study, chosen = draw_study(pools, per_stratum, seed=seed, annotators=names, study_id=study_id)
    store = open_cli_store()
    stream = study_stream(study.study_id)
    existing = next(iter(store.read_stream(stream)), None)
    event = study_event(study)
    if existing is not None and existing.payload != event.payload:
        raise InputError(
            f"study {study.study_id} exists with another draw", field="study", hint="choose another --study"
        )
    views = {p.packet_id: packet_view(p, *chosen[p.packet_id]) for p in study.packets}
    for name in names:
        packets = packet_file(study, name, views)
        write_atomic(out / f"packets_{name}.json", json.dumps(packets, indent=2, ensure_ascii=False) + "\n")
        write_atomic(out / f"packets_{name}.md", packet_markdown(packets))
        rows = blank_rows(study, name)
        write_atomic(out / f"answers_{name}.{sheet}", sheet_csv(rows) if sheet == "csv" else sheet_json(rows))
    write_atomic(out / MANIFEST, json.dumps({"study": study.study_id}) + "\n")
    store.append(stream, [event])
    strata: dict[str, int] = {}
    for p in study.packets:
        strata[p.stratum] = strata.get(p.stratum, 0) + 1
    print_table(
        f"study {study.study_id}: {len(study.packets)} packets for {annotators} annotators in {out}",
        ["stratum", "packets"],
        [[s, n] for s, n in sorted(strata.items())],
    )


def _study(store: EventStore, study_id: str | None, near: Path | None) -> Study:
    """The named study, else the one named by a manifest beside the files, else the only one stored."""
    from scoring.relabel import load_study

    if study_id is None and near is not None and (near / MANIFEST).is_file():
        study_id = json.loads((near / MANIFEST).read_text())["study"]
    return load_study(store, study_id)


@relabel_app.command("import")
def import_(
    files: list[Path] = typer.Argument(..., help="Answer sheets (answers_*.csv or .json)."),
    adjudication: bool = typer.Option(
        False, "--adjudication", help="One adjudication sheet (from `relabel report`) instead."
    ),
    study_id: str = typer.Option(None, "--study", help="Study id (default: the manifest beside the files)."),
) -> None:
    """Validate every sheet in full, then store them all at once (one bad row stores nothing)."""
    from auditor.core.errors import InputError
    from scoring.relabel import collect_votes, consensus, load_sheets, parse_sheet, study_stream

    store = open_cli_store()
    study = _study(store, study_id, files[0].parent)
    stored, adjudicated, n_adjudications = load_sheets(store, study)
    if adjudication:
        if len(files) != 1:
            raise InputError("--adjudication takes one sheet", field="files")
        expected = [p for p in consensus(collect_votes(stored)).splits if p not in adjudicated]
        if not expected:
            raise InputError("no three-way split awaits adjudication", path=str(files[0]))
        sheet = parse_sheet(files[0], study, expected, adjudication=True)
        store.append(
            study_stream(study.study_id), [sheet.adjudication_event(study.study_id, n_adjudications)]
        )
        console.print(f"study {study.study_id}: {len(sheet.answers)} adjudicated label(s) stored")
        return
    parsed = [parse_sheet(f, study) for f in files]
    before = {s.annotator: s.answers for s in stored}
    events = []
    for sheet in parsed:
        if sheet.annotator in before:
            if before[sheet.annotator] != sheet.answers:
                raise InputError(
                    f"annotator {sheet.annotator!r} was already imported with other answers",
                    path=sheet.path,
                    field="annotator",
                    hint="the store is append-only; give the new sheet another annotator name",
                )
            continue
        before[sheet.annotator] = sheet.answers
        events.append(sheet.answers_event(study.study_id))
    store.append(study_stream(study.study_id), events)
    console.print(
        f"study {study.study_id}: {len(events)} answer sheet(s) stored, {len(parsed) - len(events)} already in the store"
    )


@relabel_app.command("report")
def report(
    study_id: str = typer.Option(None, "--study", help="Study id (default: the only study in the store)."),
    run_id: str = typer.Option(None, "--run", help="A coalition run to recompute under consensus labels."),
    out: Path = typer.Option(
        None, "--out", help="Folder for adjudication.csv (default: reports/relabel/<study>)."
    ),
    resamples: int = typer.Option(20_000, "--resamples", min=100, help="Cluster-bootstrap resamples."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Agreement (exact, invalid-vs-not, Fleiss' κ), consensus, splits to adjudicate, and the coalition rerun."""
    from auditor.core.errors import InputError
    from scoring.relabel import (
        ADJUDICATION_COLUMNS,
        ADJUDICATOR,
        AGREEMENT_COLUMNS,
        coalition_rerun,
        load_sheets,
        relabel_summary,
        sheet_csv,
    )

    store = open_cli_store()
    study = _study(store, study_id, None)
    sheets, adjudicated, _ = load_sheets(store, study)
    summary = relabel_summary(study, sheets, adjudicated)
    splits = summary.splits
    folder = out or Path("reports/relabel") / study.study_id
    if splits:
        sheet = [{"annotator": ADJUDICATOR, **s, "label": "", "competing_value": ""} for s in splits]
        write_atomic(folder / "adjudication.csv", sheet_csv(sheet, ADJUDICATION_COLUMNS))
    rerun = coalition_rerun(store, summary, run_id, resamples) if run_id else None
    if rerun is not None and rerun.n_targets == 0:
        raise InputError(
            f"run {run_id} ({rerun.dataset}) holds none of study {study.study_id}'s targets", field="run"
        )
    if as_json:
        print_json({**summary.as_json(), "coalition": rerun.as_json() if rerun else None})
        return
    print_table(
        f"study {study.study_id}: agreement of {len(sheets)} annotators before adjudication",
        ["group", "pairs", *AGREEMENT_COLUMNS],
        [[r.group, r.n_pairs, *r.cells()] for r in summary.agreement],
    )
    counts = summary.counts
    print_table("consensus", list(counts), [list(counts.values())])
    matched, compared = summary.matched, summary.compared
    if compared:
        console.print(
            f"consensus matches the authored label on {matched}/{compared} pairs ({matched / compared:.1%}); "
            "descriptive, not an accuracy estimate"
        )
    if splits:
        console.print(
            f"{len(splits)} pair(s) without a majority await adjudication: sheet {folder / 'adjudication.csv'}"
        )
    if rerun is not None:
        print_table(
            f"coalition metrics of run {run_id} on the relabelled targets (top-50, order ≤ 3)",
            rerun.columns,
            rerun.rows,
        )
        console.print(rerun.note)
