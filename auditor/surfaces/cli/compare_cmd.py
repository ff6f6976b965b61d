"""`auditor compare-auditors RUN_A RUN_B`: two auditors' runs over the same bundles, side by side."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import JSON_OUTPUT, console, open_cli_store, print_json, print_table


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "—"


def compare_auditors(
    run_a: Path = typer.Argument(..., help="Reports of run A: a report, an array, or a folder of *.json."),
    run_b: Path = typer.Argument(..., help="Reports of run B, over the same bundles."),
    traces: Path = typer.Option(
        None, "--traces", help="The audited traces (a file or a bundle folder); default: the store."
    ),
    labels: Path = typer.Option(
        None, "--labels", help="Sidecar labels (JSONL) with target_fired: seeded-trajectory verdicts."
    ),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Schema validity, citation-resolvable findings, seeded risk verdicts and decision agreement."""
    from auditor.audit.agent.compare import compare_runs, load_run, seeded_from_labels

    a, b = load_run(run_a), load_run(run_b)
    wanted = set(a) & set(b)
    label_records: list[dict] = []
    if traces is not None:
        from auditor.audit.review import read_traces

        files = sorted(traces.rglob("*.jsonl")) if traces.is_dir() else [traces]
        by_id = {}
        for f in files:
            if f.name == "labels.jsonl":
                continue
            for t, lab, _ in read_traces(f):
                by_id[t.header.trace_id] = t
                if lab is not None:
                    label_records.append(lab.model_dump(mode="json"))  # type: ignore[attr-defined]
    else:
        from auditor.core.store.traces import load_trace

        store = open_cli_store()
        by_id = {t: load_trace(store, t) for t in sorted(wanted)}
    if labels is not None:
        if not labels.is_file():
            raise InputError("no such labels file", path=str(labels), field="--labels")
        for n, line in enumerate(labels.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    label_records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"not JSON: {exc.msg}", path=str(labels), line=n) from exc
    result = compare_runs(a, b, by_id, seeded_from_labels(label_records), (str(run_a), str(run_b)))
    if as_json:
        print_json(result.to_dict())
        return
    rows = []
    for arm in result.arms:
        rows.append(
            [
                arm.run,
                arm.reports,
                _pct(arm.schema_valid, arm.reports),
                _pct(arm.resolvable_findings, arm.findings),
                _pct(arm.resolved_units, arm.units),
                _pct(arm.positive_flagged, arm.seeded_positive),
                _pct(arm.negative_clear, arm.seeded_negative),
            ]
        )
    print_table(
        f"{result.shared} shared bundle(s)",
        [
            "run",
            "reports",
            "schema-valid",
            "resolvable findings",
            "resolved units",
            "seeded +: flagged",
            "seeded −: clear",
        ],
        rows,
    )
    console.print(f"decision agreement: {_pct(result.decisions_agree, result.shared)}")
    for side, ids in (("A", result.only_a), ("B", result.only_b)):
        if ids:
            console.print(f"[yellow]only in run {side}:[/yellow] {len(ids)} bundle(s), e.g. {ids[0]}")


def register(app: typer.Typer) -> None:
    app.command("compare-auditors")(compare_auditors)
