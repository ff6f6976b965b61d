"""Incident review on runs with known outcomes: does the review flag failed runs, stay quiet on
succeeded ones, rank runs by risk, and attribute failures to the right agent and step?

    python benchmarks/outcome_eval.py DIR --outcomes CSV [--policy FILE] [--group-by COLUMN] [--json]
    python benchmarks/outcome_eval.py WHOWHEN_DIR --whowhen [--json]
    ... [--split-by task|COLUMN] [--only COLUMN=VALUE] [--tau2 TAU2_DOMAIN_DIR] [--plot roc.png]

With ``--outcomes`` (a CSV with ``file`` and ``outcome`` = failed | succeeded, as
``shared/data/taubench/airline/outcomes.csv``) every run in DIR is reviewed with the outcome
hidden (the review decides it), and the report prints, with Wilson 95% intervals, the failed runs
with an actionable finding (realized, intercepted or adjacent), the succeeded runs with one, and
the AUROC of ``risk_score`` against failure (ties count one half) with a 95% interval that
resamples tasks (``scoring.stats.bootstrap``; the split column's values with ``--split-by
COLUMN``: a half of 17 runs is a wide interval, and the figures say so); ``--group-by COLUMN``
(a CSV column such as ``repo``) prints the same figures per group beside the total, and
``--held-out G1,G2`` (with it) the figures of the development groups and of the named ones kept
apart. With ``--whowhen`` every run is reviewed with ``--outcome failed`` and the report's
attribution is scored against the sidecar labels (agent and exact step), per subset, with the
expected calibration error (ECE) of the attribution's confidence against the step being right.
The labels are read only after the review answered. ``--split-by task`` prints every figure for
the two halves of the tasks as well
(``benchmarks/task_split.py``: by a hash of the task, the same split every time): build on one,
measure on the other; ``--split-by COLUMN`` hashes a CSV column instead (AgentDojo's
``user_task_id``: its file names carry no task). ``--only COLUMN=VALUE`` reviews the runs of one
group (``suite=travel``). ``--plot FILE`` draws the ROC curve of every part printed. ``--tau2 DIR``
(τ²-bench's airline folder) counts the runs of the tasks whose τ-bench expected actions τ²-bench
corrected as failed, and names those tasks.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import load_policy
from auditor.audit.report.disposition import ACTIONABLE
from auditor.audit.report.validator import validate_report
from benchmarks.task_split import corrected_tasks, ece, half, task_of
from schemas import AuditReport, Trace
from scoring.stats.auroc import auroc
from scoring.stats.auroc import auroc_interval as stats_auroc_interval
from scoring.stats.wilson import wilson_interval

RESAMPLES = 2_000  # the AUROC interval's: on 17 runs its bounds move by up to 0.02 between seeds


def _failed(row: dict) -> bool:
    return row["outcome"] == "failed"


def auroc_interval(rows: list[dict], positive: Callable[[dict], bool] = _failed) -> list[float] | None:
    """A 95% percentile interval of the AUROC of ``risk_score`` for ``positive`` (failure, or a
    label), resampling tasks (a task's runs share its difficulty, so the task, not the run, is the
    unit); None without two tasks, or without runs on both sides."""
    ci = stats_auroc_interval(
        [r["risk_score"] for r in rows],
        [positive(r) for r in rows],
        [r["task"] for r in rows],
        n_resamples=RESAMPLES,
    )
    return None if ci is None else [round(ci.low, 3), round(ci.high, 3)]


def fmt_auroc(value: float, ci: list[float] | None) -> str:
    return f"{value:.3f}" + (f" [{ci[0]:.3f}–{ci[1]:.3f}]" if ci else "")


def plot_roc(parts: dict[str, tuple[list[dict], list[float] | None]], path: Path, title: str) -> None:
    """Each part's ROC curve of ``risk_score`` against failure, its AUROC and interval (the one the
    figures print) in the legend (``scoring.roc_figure``)."""
    from scoring.roc_figure import Curve, write_roc

    curves = [
        Curve(
            name,
            [r["risk_score"] for r in rows if _failed(r)],
            [r["risk_score"] for r in rows if not _failed(r)],
            (interval[0], interval[1]) if interval else None,
        )
        for name, (rows, interval) in parts.items()
    ]
    write_roc(curves, path, title)


def rate(hits: int, n: int) -> dict:
    lo, hi = wilson_interval(hits, n) if n else (0.0, 0.0)
    return {"hits": hits, "n": n, "rate": hits / n if n else 0.0, "lo": lo, "hi": hi}


def fmt(r: dict) -> str:
    return f"{r['hits']:>3}/{r['n']:<3} {100 * r['rate']:5.1f}% [{100 * r['lo']:.1f}–{100 * r['hi']:.1f}]"


def review(trace: Trace, policy, outcome: str | None) -> AuditReport:  # type: ignore[no-untyped-def]
    report = run_rules_audit(trace, policy=policy, outcome=outcome)
    check = validate_report(report.model_dump(mode="json"), trace)
    if not check.ok:
        raise SystemExit(f"{trace.header.trace_id}: the report does not validate: {check.to_dict()}")
    return report


def by_outcome(
    root: Path,
    outcomes_csv: Path,
    policy_path: Path | None,
    group_by: str | None = None,
    split: str | None = None,
    tau2: Path | None = None,
    held_out: frozenset[str] = frozenset(),
    only: tuple[str, str] | None = None,
) -> dict:
    from ingest import open_traces

    policy = load_policy(policy_path) if policy_path else None
    with outcomes_csv.open(newline="") as f:
        table = list(csv.DictReader(f))
    split_column = split if split != "task" else None  # "task" is read from the file name
    columns = [(group_by, "to group by"), (only[0] if only else None, "to select by")]
    for column, why in [*columns, (split_column, "to split by")]:
        if column and table and column not in table[0]:
            raise SystemExit(f"{outcomes_csv}: no column {column!r} {why} (columns: {', '.join(table[0])})")
    if only:
        values = sorted({row[only[0]] for row in table})
        table = [row for row in table if row[only[0]] == only[1]]
        if not table:
            raise SystemExit(f"{outcomes_csv}: no run has {only[0]}={only[1]} (values: {', '.join(values)})")
    labels = {row["file"]: row["outcome"] for row in table}
    split_on = {row["file"]: row[split_column] for row in table} if split_column else {}
    groups = {row["file"]: row[group_by] for row in table} if group_by else {}
    runs: dict[str, list[tuple[Trace, str]]] = {}
    named = []
    for name, outcome in sorted(labels.items()):
        path = root / name
        if not path.exists():
            continue
        for imported in open_traces(path):
            trace = Trace(header=imported.header, steps=list(imported.steps()))
            runs.setdefault(task_of(name), []).append((trace, outcome))
            named.append((name, outcome, trace))
    corrected = corrected_tasks(tau2, runs, write_tools(policy)) if tau2 else {}
    rows = []
    for name, outcome, trace in named:
        report = review(trace, policy, None)
        actionable = [
            f for f in report.findings if f.disposition in ACTIONABLE and f.detector != "failure_attribution"
        ]
        rows.append(
            {
                "file": name,
                "outcome": "failed" if task_of(name) in corrected else outcome,
                "group": groups.get(name),
                "task": split_on.get(name, task_of(name)),  # the unit of the halves and the intervals
                "half": half(split_on.get(name, task_of(name))),
                "relabelled": task_of(name) in corrected and outcome != "failed",
                "risk_score": report.risk_score,
                "inferred": report.outcome.value.value if report.outcome else None,
                "actionable": len(actionable),
                "findings": [
                    f"{f.detector}:{f.disposition.value}:{f.first_anomalous_step}" for f in report.findings
                ],
            }
        )
    result = summary(rows) | {"rows": rows, "corrected_tasks": corrected}
    if split:
        result["halves"] = {h: summary([r for r in rows if r["half"] == h]) for h in "AB"}
    if group_by:
        result["groups"] = {
            g: summary([r for r in rows if r["group"] == g]) for g in sorted(set(groups.values()))
        }
    if held_out:
        unknown = held_out - set(groups.values())
        if unknown:
            raise SystemExit(
                f"--held-out names no {group_by} of {outcomes_csv}: {', '.join(sorted(unknown))}"
            )
        result["development"] = summary([r for r in rows if r["group"] not in held_out])
        result["held_out"] = summary([r for r in rows if r["group"] in held_out])
    return result


def summary(rows: list[dict]) -> dict:
    """The three figures over some reviewed runs."""
    failed = [r for r in rows if r["outcome"] == "failed"]
    ok = [r for r in rows if r["outcome"] == "succeeded"]
    return {
        "runs": len(rows),
        "failed_with_actionable": rate(sum(1 for r in failed if r["actionable"]), len(failed)),
        "succeeded_with_actionable": rate(sum(1 for r in ok if r["actionable"]), len(ok)),
        "auroc_risk_score": auroc([r["risk_score"] for r in failed], [r["risk_score"] for r in ok]),
        "auroc_interval": auroc_interval(rows),
        "ece_risk_score": ece([r["risk_score"] for r in rows], [r["outcome"] == "failed" for r in rows]),
    }


def write_tools(policy) -> set[str]:  # type: ignore[no-untyped-def]
    """The tools a policy's rules, confirmations and requests name: the writes."""
    if policy is None:
        return set()
    named = [
        t
        for group in (policy.action_rules, policy.confirmations, policy.requests)
        for r in group
        for t in r.tools
    ]
    return set(named)


def whowhen(root: Path, split: bool = False) -> dict:
    from auditor.audit.attribution.evaluation import load_cases
    from auditor.audit.attribution.facts import agent_name

    rows = []
    for case in load_cases(root):
        report = review(case.trace, None, "failed")
        a = report.attribution
        agent_ok = (
            a is not None and a.agent is not None and agent_name(a.agent) == agent_name(case.mistake_agent)
        )
        step_ok = a is not None and a.step_index == case.mistake_step
        rows.append(
            {
                "case": case.name,
                "subset": case.subset,
                "half": half(task_of(case.name)),
                "agent_ok": agent_ok,
                "step_ok": step_ok,
                "finding_at_step": any(
                    f.first_anomalous_step == (a.step_id if a else None) for f in report.findings
                ),
                "actionable": any(f.disposition in ACTIONABLE for f in report.findings),
                "confidence": a.confidence if a else 0.0,
                "step": a.step_index if a else None,
                "label_step": case.mistake_step,
            }
        )
    result = whowhen_summary(rows) | {"rows": rows}
    if split:
        result["halves"] = {h: whowhen_summary([r for r in rows if r["half"] == h]) for h in "AB"}
    return result


def whowhen_summary(rows: list[dict]) -> dict:
    """Per subset: agent and step accuracy, a finding at the decisive step, an actionable
    finding, and the ECE of the attribution's confidence against the step being right."""
    out = {}
    for subset in sorted({r["subset"] for r in rows}):
        mine = [r for r in rows if r["subset"] == subset]
        n = len(mine)
        out[subset] = {
            "agent": rate(sum(r["agent_ok"] for r in mine), n),
            "step": rate(sum(r["step_ok"] for r in mine), n),
            "finding_at_decisive_step": rate(sum(r["finding_at_step"] for r in mine), n),
            "actionable": rate(sum(r["actionable"] for r in mine), n),
            "ece_confidence": ece([r["confidence"] for r in mine], [r["step_ok"] for r in mine]),
        }
    return out


def by_label(rows: list[dict], outcomes_csv: Path, label: str, among: str | None, detector: str) -> dict:
    """A security label's table (e.g. ``breached`` among ``injected`` runs, AgentDojo): runs that
    carry the label, runs of ``among`` that do not, and runs outside ``among``, each with an
    actionable and with a realized finding of ``detector``; the AUROC of ``risk_score`` for the
    label within ``among``; and for every run (``outcome``: failed or succeeded) the AUROC of failure.
    The labels are read only here, after every review answered."""
    with outcomes_csv.open(newline="") as f:
        table = {row["file"]: row for row in csv.DictReader(f)}
    missing = sorted({c for c in (label, among) if c and c not in next(iter(table.values()), {})})
    if missing:
        raise SystemExit(
            f"{outcomes_csv}: no column {', '.join(missing)} (columns: {', '.join(next(iter(table.values())))})"
        )

    def yes(row: dict, column: str | None) -> bool:
        return column is None or str(table[row["file"]][column]).strip().lower() in ("true", "1", "yes")

    def has(row: dict, dispositions: tuple[str, ...]) -> bool:
        return any(f.split(":")[0] == detector and f.split(":")[1] in dispositions for f in row["findings"])

    def cells(part: list[dict]) -> dict:
        return {
            "actionable": rate(sum(has(r, ACTIONABLE_NAMES) for r in part), len(part)),
            "realized": rate(sum(has(r, ("realized",)) for r in part), len(part)),
        }

    inside = [r for r in rows if yes(r, among)]
    positive = [r for r in inside if yes(r, label)]
    negative = [r for r in inside if not yes(r, label)]
    outside = [r for r in rows if not yes(r, among)]
    return {
        "label": label,
        "among": among,
        "detector": detector,
        "positive": cells(positive),
        "negative": cells(negative),
        "outside": cells(outside),
        "auroc_label": auroc([r["risk_score"] for r in positive], [r["risk_score"] for r in negative]),
        "auroc_label_interval": auroc_interval(inside, lambda r: yes(r, label)),
        "auroc_failed": auroc(
            [r["risk_score"] for r in rows if r["outcome"] == "failed"],
            [r["risk_score"] for r in rows if r["outcome"] == "succeeded"],
        ),
        "auroc_failed_interval": auroc_interval(rows),
    }


ACTIONABLE_NAMES = tuple(d.value for d in ACTIONABLE)


def print_label(title: str, t: dict) -> None:
    among = f" among {t['among']}" if t["among"] else ""
    print(f"-- {title}: {t['detector']} findings, label {t['label']}{among}")
    print(f"{'runs':<34} {'with an actionable finding':<28} with a realized one")
    for key, name in (
        ("positive", f"{t['label']}"),
        ("negative", f"{t['among'] or 'all'}, not {t['label']}"),
        ("outside", f"not {t['among']}" if t["among"] else ""),
    ):
        if name:
            print(f"{name:<34} {fmt(t[key]['actionable']):<28} {fmt(t[key]['realized'])}")
    print(
        f"AUROC of risk_score, {t['label']} vs not{among}: {fmt_auroc(t['auroc_label'], t['auroc_label_interval'])}"
    )
    print(
        "AUROC of risk_score, failed vs succeeded (all runs): "
        + fmt_auroc(t["auroc_failed"], t["auroc_failed_interval"])
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--outcomes", type=Path, help="CSV with file,outcome (failed|succeeded)")
    ap.add_argument("--policy", type=Path, help="policy YAML the runs are reviewed under")
    ap.add_argument("--whowhen", action="store_true", help="Who&When folder: attribution accuracy")
    ap.add_argument("--group-by", help="a CSV column (e.g. repo): the figures per group too")
    ap.add_argument(
        "--held-out",
        help="with --group-by: groups kept apart (e.g. matplotlib,pytest-dev): both parts' figures",
    )
    ap.add_argument(
        "--split-by",
        help="task, or a CSV column (e.g. user_task_id): the figures for the two halves of its values too",
    )
    ap.add_argument("--only", help="COLUMN=VALUE: review only the runs of that group (e.g. suite=travel)")
    ap.add_argument(
        "--tau2", type=Path, help="τ²-bench domain folder: runs of tasks it corrected count failed"
    )
    ap.add_argument("--label", help="a true/false CSV column (e.g. breached): its own table")
    ap.add_argument("--among", help="with --label: only the runs where this column is true (e.g. injected)")
    ap.add_argument("--detector", default="injected_instruction", help="with --label: whose findings count")
    ap.add_argument(
        "--plot", type=Path, help="with --outcomes: the ROC curves of every part printed (PNG, SVG, PDF)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.outcomes and not args.whowhen:
        ap.error("give --outcomes CSV or --whowhen")
    if args.held_out and not args.group_by:
        ap.error("--held-out names groups of --group-by")
    held_out = frozenset(g.strip() for g in (args.held_out or "").split(",") if g.strip())
    if args.whowhen and args.split_by not in (None, "task"):
        ap.error("--whowhen splits by task only")
    if args.plot and args.whowhen:
        ap.error("--plot draws the ROC curves of --outcomes; --whowhen scores attribution")
    if args.plot and args.plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        ap.error(f"--plot {args.plot}: name a .png, .svg or .pdf file")
    if args.only and "=" not in args.only:
        ap.error("--only takes COLUMN=VALUE")
    only = tuple(args.only.split("=", 1)) if args.only else None
    started = time.perf_counter()
    result = (
        whowhen(args.dir, args.split_by == "task")
        if args.whowhen
        else by_outcome(
            args.dir, args.outcomes, args.policy, args.group_by, args.split_by, args.tau2, held_out, only
        )
    )
    if args.label and not args.whowhen:
        result["by_label"] = by_label(result["rows"], args.outcomes, args.label, args.among, args.detector)
        for key in ("halves", "groups"):
            for name in result.get(key, {}):
                rows = [r for r in result["rows"] if (r["half"] if key == "halves" else r["group"]) == name]
                result[key][name]["by_label"] = by_label(
                    rows, args.outcomes, args.label, args.among, args.detector
                )
    seconds = time.perf_counter() - started
    if args.plot and not args.whowhen:
        plot_roc(plotted_parts(result, held_out), args.plot, f"risk_score against failure: {args.dir}")
    if args.json:
        json.dump(result | {"seconds": round(seconds, 1)}, sys.stdout, indent=2)
        print()
        return
    if args.whowhen:
        print(f"Who&When, review --outcome failed ({seconds:.1f} s): report attribution vs labels")
        print_whowhen("all", result)
        for h, part in result.get("halves", {}).items():
            print_whowhen(f"half {h}", part)
        return
    print(f"{result['runs']} runs reviewed in {seconds:.1f} s (outcome hidden from the review)")
    if args.tau2:
        fixed = ", ".join(f"{t} (τ² {i})" for t, i in sorted(result["corrected_tasks"].items())) or "none"
        print(f"tasks τ²-bench corrected, their runs counted failed: {fixed}")
    print_outcomes("all", result)
    for h, part in result.get("halves", {}).items():
        print_outcomes(f"half {h}", part)
    if held_out:
        print_outcomes("development (all but the held-out groups)", result["development"])
        print_outcomes(f"held out ({', '.join(sorted(held_out))})", result["held_out"])
    if args.label:
        print_label("all", result["by_label"])
        for key, word in (("halves", "half"), ("groups", args.group_by)):
            for name, part in result.get(key, {}).items():
                print_label(f"{word} {name}", part["by_label"])
    if args.group_by:
        print(f"\n{args.group_by:<16} {'runs':>4}  {'failed with one':<28} {'succeeded with one':<28} AUROC")
        for group, g in result["groups"].items():
            print(
                f"{group:<16} {g['runs']:>4}  {fmt(g['failed_with_actionable']):<28} "
                f"{fmt(g['succeeded_with_actionable']):<28} {fmt_auroc(g['auroc_risk_score'], g['auroc_interval'])}"
            )


def plotted_parts(result: dict, held_out: frozenset[str]) -> dict[str, tuple[list[dict], list[float] | None]]:
    """The parts the text report prints, each with its rows and the AUROC interval printed for it:
    all runs, the halves, the development and held-out groups."""
    rows = result["rows"]
    parts = {"all": (rows, result["auroc_interval"])}
    for h, part in result.get("halves", {}).items():
        parts[f"half {h}"] = ([r for r in rows if r["half"] == h], part["auroc_interval"])
    if held_out:
        parts["development"] = (
            [r for r in rows if r["group"] not in held_out],
            result["development"]["auroc_interval"],
        )
        parts["held out"] = (
            [r for r in rows if r["group"] in held_out],
            result["held_out"]["auroc_interval"],
        )
    return parts


def print_outcomes(title: str, r: dict) -> None:
    print(f"-- {title}: {r['runs']} runs")
    print(f"failed runs with an actionable finding:    {fmt(r['failed_with_actionable'])}")
    print(f"succeeded runs with an actionable finding: {fmt(r['succeeded_with_actionable'])}")
    print(
        f"AUROC of risk_score against failure:       {fmt_auroc(r['auroc_risk_score'], r['auroc_interval'])}"
    )
    print(f"ECE of risk_score as P(failed):            {r['ece_risk_score']:.3f}")


def print_whowhen(title: str, result: dict) -> None:
    print(f"-- {title}")
    print(f"{'subset':<22} {'agent':<28} {'step':<28} {'finding at step':<28} {'actionable':<28} ECE")
    for subset, c in result.items():
        if subset not in ("rows", "halves"):
            print(
                f"{subset:<22} {fmt(c['agent']):<28} {fmt(c['step']):<28} "
                f"{fmt(c['finding_at_decisive_step']):<28} {fmt(c['actionable']):<28} {c['ece_confidence']:.3f}"
            )


if __name__ == "__main__":
    main()
