"""`auditor triage DIR`: review a folder of runs and print them ranked by risk.

Each run is reviewed and stored as `auditor review` would (trace and report in the store); the
table lists the riskiest first with the recorded outcome, the top finding and who is responsible
at which step. A file that cannot be reviewed is listed with its reason and does not stop the
others. Exit 2 when a file failed, else 1 when a run has an actionable finding, else 0.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import console, err_console, print_json, print_table, state

if TYPE_CHECKING:
    from auditor.audit.verdicts import Agreement, Verdicts
    from scoring.stats.wilson import Rate

COLUMNS = ["run", "outcome", "risk", "top finding", "agent", "step"]


def _table(root: Path, rows: list, total: int) -> None:  # rows: list[auditor.audit.triage.RunRow]
    title = f"{root}: {len(rows)} of {total} run(s), riskiest first" if len(rows) < total else f"{root}"
    table = Table(title=title)
    for col in COLUMNS:
        wraps = col in ("run", "top finding", "agent")  # the rest are short; these share what is left
        table.add_column(
            col, overflow="fold", no_wrap=not wraps, min_width=16 if col == "top finding" else None
        )
    for r in rows:
        run = r.file if sum(o.file == r.file for o in rows) == 1 else f"{r.file} {r.trace_id}"
        cells = [run, r.outcome or "", f"{r.risk_score:.3f}", r.top_finding or "", r.agent, r.step_id]
        table.add_row(*[Text("" if v is None else str(v)) for v in cells])  # cells are data, never markup
    console.print(table)


def _agreement_lines(a: Agreement) -> list[list[str]]:
    auroc = (
        f"{a.auroc:.3f} (95% CI {a.interval[0]:.3f}–{a.interval[1]:.3f}, resampling {a.resampled}; "
        "failed above succeeded, ties one half)"
        if a.auroc is not None and a.interval is not None
        else "none: it needs failed and succeeded runs"
    )
    lines = [
        ["failed runs a detector flagged", str(a.failed_flagged or "no failed run")],
        ["succeeded runs a detector flagged", str(a.succeeded_flagged or "no succeeded run")],
        ["AUROC of risk_score", auroc],
    ]
    if a.without_verdict:
        lines.append(["runs without a verdict", _some(a.without_verdict)])
    if a.unmatched:
        lines.append(["verdicts naming no file here", _some(a.unmatched)])
    return lines


def _group_row(group: str, a: Agreement) -> list[str]:
    def rate(r: Rate | None) -> str:
        return "-" if r is None else f"{r.successes}/{r.total} ({r.value:.0%})"

    auroc = "-" if a.auroc is None else f"{a.auroc:.3f}"
    if a.interval is not None:
        auroc += f" [{a.interval[0]:.3f}–{a.interval[1]:.3f}]"
    return [group, rate(a.failed_flagged), rate(a.succeeded_flagged), auroc]


def _some(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"{len(names)}: {', '.join(names[:shown])}{more}"


def _csv(rows: list) -> str:
    from auditor.audit.triage import RunRow

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(RunRow.__dataclass_fields__), lineterminator="\n")
    writer.writeheader()
    writer.writerows(r.as_dict() for r in rows)
    return out.getvalue()


def triage_cmd(
    folder: Path = typer.Argument(..., help="A folder of runs (trace files in any known format)."),
    recursive: bool = typer.Option(False, "--recursive", "-r", help="Review files in subfolders too."),
    policy: Path = typer.Option(None, "--policy", help="Declared invariants (YAML) for every run."),
    input_format: str = typer.Option(
        "auto", "--input-format", help="Importer name (see 'auditor ingest --help')."
    ),
    top: int = typer.Option(None, "--top", min=1, help="Show only the N riskiest runs."),
    as_json: bool = typer.Option(False, "--json", help="Print the ranked runs as JSON."),
    as_csv: bool = typer.Option(False, "--csv", help="Print the ranked runs as CSV."),
    jobs: int = typer.Option(
        None, "--jobs", "-j", min=1, help="Runs reviewed at once (default: one per CPU core)."
    ),
    outcomes: Path = typer.Option(
        None,
        "--outcomes",
        help="Recorded verdicts, joined to files by name: a CSV (a file, run or instance_id column; "
        "outcome failed|succeeded or resolved true|false), SWE-bench's report JSON or "
        "per_instance_details.json. Known failures are attributed (as 'review --outcome failed'), and "
        "the output adds how the ranking agrees with the verdicts, which the detectors never read.",
    ),
    group_by: str = typer.Option(
        None,
        "--group-by",
        help="With --outcomes: a column of the verdicts CSV (a repository, a suite); the agreement "
        "is printed for each of its values too.",
    ),
    plot: Path = typer.Option(
        None,
        "--plot",
        help="With --outcomes: draw the ROC curve of risk_score against them (.png, .svg, .pdf).",
    ),
) -> None:
    """Review every run in a folder (each stored as 'auditor review' stores it) and rank them:
    run, recorded outcome, risk_score, top finding, responsible agent and step.

    Exit 2 when a file could not be reviewed (listed with file, line and field), else 1 when
    a run has an actionable finding, else 0."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from auditor.audit.triage import triage
    from ingest.pipeline import iter_files

    if as_json and as_csv:
        raise InputError("--json and --csv exclude each other", field="--csv")
    if not folder.is_dir():
        raise InputError(
            "is not a folder: triage reviews a folder of runs",
            path=str(folder),
            hint="for one file use 'auditor review'",
        )
    if input_format != "auto":
        from ingest.registry import get

        get(input_format)  # an unknown importer is one usage error, not one failure per file
    loaded_policy = None
    if policy is not None:
        from auditor.audit.policy import load_policy

        loaded_policy = load_policy(policy)
    files = [(p, str(p.relative_to(folder))) for p in iter_files(folder, recursive)]
    if not files:
        raise InputError("the folder holds no file: nothing was reviewed", path=str(folder))
    labels = [label for _, label in files]
    verdicts = _verdicts_asked(outcomes, group_by, plot)
    known = _known(verdicts, labels) if verdicts is not None else None
    columns = (TextColumn("reviewing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=as_json or as_csv) as bar:
        task = bar.add_task("runs", total=len(files))
        rows, unreviewed = triage(
            files,
            store_url=state.store_url,
            policy=loaded_policy,
            fmt=input_format,
            jobs=jobs,
            outcomes=known,
            on_done=lambda _label: bar.advance(task),
        )
    agreed, groups = _agreements(verdicts, rows, labels, plot, folder) if verdicts is not None else (None, {})
    failed = [u for u in unreviewed if not u.skipped]
    shown = rows[:top] if top else rows
    if as_json:
        print_json(
            {
                "totals": {
                    "files": len(files),
                    "runs": len(rows),
                    "failed": len(failed),
                    "skipped": len(unreviewed) - len(failed),
                },
                "runs": [r.as_dict() for r in shown],
                "not_reviewed": [u.as_dict() for u in unreviewed],
                **({"agreement": agreed.as_dict()} if agreed else {}),
                **({"agreement_by_group": {g: a.as_dict() for g, a in groups.items()}} if groups else {}),
            }
        )
    elif as_csv:
        sys.stdout.write(_csv(shown))
        for u in unreviewed:
            err_console.print(
                f"{'skipped' if u.skipped else 'failed'}: {u.reason}", markup=False, highlight=False
            )
        for name, value in _agreement_lines(agreed) if agreed else []:
            err_console.print(f"{name}: {value}", markup=False, highlight=False)
        for group, a in groups.items():
            line = "; ".join(f"{name}: {value}" for name, value in _agreement_lines(a)[:3])
            err_console.print(f"{group_by}={group}: {line}", markup=False, highlight=False)
    else:
        _table(folder, shown, len(rows))
        skipped = [[u.file] for u in unreviewed if u.skipped]
        if skipped:
            print_table("skipped (not a known trace format)", ["file"], skipped)
        if failed:
            print_table("failed (not reviewed)", ["file", "why"], [[u.file, u.reason] for u in failed])
        if agreed:
            title = f"agreement with {agreed.source} (the detectors never read the verdicts)"
            print_table(title, ["measure", "value"], _agreement_lines(agreed))
        if groups:
            columns = [group_by, "failed runs flagged", "succeeded runs flagged", "AUROC of risk_score"]
            print_table(f"agreement by {group_by}", columns, [_group_row(g, a) for g, a in groups.items()])
    if failed:
        raise typer.Exit(2)
    if any(r.actionable for r in rows):
        raise typer.Exit(1)


def _verdicts_asked(outcomes: Path | None, group_by: str | None, plot: Path | None) -> Verdicts | None:
    """The verdicts to join, read and checked before any run is reviewed, with what is asked of
    them; None without --outcomes (and then nothing of it is imported: numpy is not needed)."""
    asked = {
        "--plot": (plot, "draws the ranking against recorded verdicts"),
        "--group-by": (group_by, "groups the agreement with recorded verdicts"),
    }
    for option, (given, does) in asked.items():
        if given is not None and outcomes is None:
            raise InputError(f"{option} {does}: give --outcomes", field=option)
    if outcomes is None:
        return None
    from auditor.audit.verdicts import load_verdicts
    from scoring.roc_figure import check_target

    if plot is not None:
        check_target(plot)
    return load_verdicts(outcomes, group_by)


def _agreements(
    verdicts: Verdicts, rows: list, labels: list[str], plot: Path | None, folder: Path
) -> tuple[Agreement, dict[str, Agreement]]:
    """The agreement of all runs and, where the verdicts were grouped, of each group; the ROC
    curve drawn when asked."""
    from auditor.audit.verdicts import agreement, agreement_by_group
    from scoring.roc_figure import Curve, write_roc

    agreed = agreement(verdicts, rows, labels)
    if plot is not None:
        curve = Curve("all", agreed.failed_risk, agreed.succeeded_risk, agreed.interval)
        write_roc([curve], plot, f"risk_score against {Path(agreed.source).name}: {folder.name}")
    return agreed, agreement_by_group(verdicts, rows, labels) if verdicts.groups else {}


def _known(verdicts: Verdicts, labels: list[str]) -> dict[str, str]:
    """Each file's verdict by its label; refused when the file names none of them (a name column
    of another corpus, or ids in another form), before any run is reviewed."""
    known = {label: verdict.value for label, (_, verdict) in verdicts.matching(labels).items()}
    if verdicts.by_name and not known:
        raise InputError(
            f"no file of the folder is named in it (it names e.g. '{next(iter(verdicts.by_name))}'; "
            f"the folder holds e.g. '{labels[0]}'): nothing was reviewed",
            path=verdicts.source,
            hint="a verdict names a file by its path below the folder, its file name, or that name "
            "without its extensions (an instance id)",
        )
    return known


def register(app: typer.Typer) -> None:
    app.command("triage")(triage_cmd)
