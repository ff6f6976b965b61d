"""Incident review on runs with known outcomes: does the review flag failed runs, stay quiet on
succeeded ones, rank runs by risk, and attribute failures to the right agent and step?

    python benchmarks/outcome_eval.py DIR --outcomes CSV [--policy FILE] [--group-by COLUMN] [--json]
    python benchmarks/outcome_eval.py WHOWHEN_DIR --whowhen [--json]

With ``--outcomes`` (a CSV with ``file`` and ``outcome`` = failed | succeeded, as
``shared/data/taubench/airline/outcomes.csv``) every run in DIR is reviewed with the outcome
hidden (the review decides it), and the report prints, with Wilson 95% intervals, the failed runs
with an actionable finding (realized, intercepted or adjacent), the succeeded runs with one, and
the AUROC of ``risk_score`` against failure (ties count one half); ``--group-by COLUMN`` (a CSV
column such as ``repo``) prints the same figures per group beside the total. With ``--whowhen`` every run is
reviewed with ``--outcome failed`` and the report's attribution is scored against the sidecar
labels (agent and exact step), per subset. The labels are read only after the review answered.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

from auditor.engine import run_rules_audit
from auditor.policy import load_policy
from auditor.report.disposition import ACTIONABLE
from auditor.report.validator import validate_report
from schemas import AuditReport, Trace
from scoring.stats.wilson import wilson_interval


def auroc(pos: list[float], neg: list[float]) -> float:
    """P(a failed run scores above a succeeded one), ties one half (the Mann–Whitney statistic)."""
    if not pos or not neg:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


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


def by_outcome(root: Path, outcomes_csv: Path, policy_path: Path | None, group_by: str | None = None) -> dict:
    from ingest import open_traces

    policy = load_policy(policy_path) if policy_path else None
    with outcomes_csv.open(newline="") as f:
        table = list(csv.DictReader(f))
    if group_by and table and group_by not in table[0]:
        raise SystemExit(
            f"{outcomes_csv}: no column {group_by!r} to group by (columns: {', '.join(table[0])})"
        )
    labels = {row["file"]: row["outcome"] for row in table}
    groups = {row["file"]: row[group_by] for row in table} if group_by else {}
    rows = []
    for name, outcome in sorted(labels.items()):
        path = root / name
        if not path.exists():
            continue
        for imported in open_traces(path):
            trace = Trace(header=imported.header, steps=list(imported.steps()))
            report = review(trace, policy, None)
            actionable = [
                f
                for f in report.findings
                if f.disposition in ACTIONABLE and f.detector != "failure_attribution"
            ]
            rows.append(
                {
                    "file": name,
                    "outcome": outcome,
                    "group": groups.get(name),
                    "risk_score": report.risk_score,
                    "inferred": report.outcome.value.value if report.outcome else None,
                    "actionable": len(actionable),
                    "findings": [
                        f"{f.detector}:{f.disposition.value}:{f.first_anomalous_step}"
                        for f in report.findings
                    ],
                }
            )
    result = summary(rows) | {"rows": rows}
    if group_by:
        result["groups"] = {
            g: summary([r for r in rows if r["group"] == g]) for g in sorted(set(groups.values()))
        }
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
    }


def whowhen(root: Path) -> dict:
    from auditor.attribution.evaluation import load_cases
    from auditor.attribution.facts import agent_name

    per: dict[str, dict[str, int]] = {}
    rows = []
    for case in load_cases(root):
        report = review(case.trace, None, "failed")
        a = report.attribution
        agent_ok = (
            a is not None and a.agent is not None and agent_name(a.agent) == agent_name(case.mistake_agent)
        )
        step_ok = a is not None and a.step_index == case.mistake_step
        at_step = any(f.first_anomalous_step == (a.step_id if a else None) for f in report.findings)
        cell = per.setdefault(
            case.subset, {"n": 0, "agent": 0, "step": 0, "actionable": 0, "finding_at_step": 0}
        )
        cell["n"] += 1
        cell["agent"] += agent_ok
        cell["step"] += step_ok
        cell["finding_at_step"] += at_step
        cell["actionable"] += any(f.disposition in ACTIONABLE for f in report.findings)
        rows.append(
            {
                "case": case.name,
                "agent_ok": agent_ok,
                "step_ok": step_ok,
                "step": a.step_index if a else None,
                "label_step": case.mistake_step,
            }
        )
    return {
        subset: {
            "agent": rate(c["agent"], c["n"]),
            "step": rate(c["step"], c["n"]),
            "finding_at_decisive_step": rate(c["finding_at_step"], c["n"]),
            "actionable": rate(c["actionable"], c["n"]),
        }
        for subset, c in per.items()
    } | {"rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--outcomes", type=Path, help="CSV with file,outcome (failed|succeeded)")
    ap.add_argument("--policy", type=Path, help="policy YAML the runs are reviewed under")
    ap.add_argument("--whowhen", action="store_true", help="Who&When folder: attribution accuracy")
    ap.add_argument("--group-by", help="a CSV column (e.g. repo): the figures per group too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.outcomes and not args.whowhen:
        ap.error("give --outcomes CSV or --whowhen")
    started = time.perf_counter()
    result = (
        whowhen(args.dir) if args.whowhen else by_outcome(args.dir, args.outcomes, args.policy, args.group_by)
    )
    seconds = time.perf_counter() - started
    if args.json:
        json.dump(result | {"seconds": round(seconds, 1)}, sys.stdout, indent=2)
        print()
        return
    if args.whowhen:
        print(f"Who&When, review --outcome failed ({seconds:.1f} s): report attribution vs labels")
        print(f"{'subset':<22} {'agent':<28} {'step':<28} {'finding at step':<28} actionable")
        for subset, c in result.items():
            if subset != "rows":
                print(
                    f"{subset:<22} {fmt(c['agent']):<28} {fmt(c['step']):<28} "
                    f"{fmt(c['finding_at_decisive_step']):<28} {fmt(c['actionable'])}"
                )
        return
    print(f"{result['runs']} runs reviewed in {seconds:.1f} s (outcome hidden from the review)")
    print(f"failed runs with an actionable finding:    {fmt(result['failed_with_actionable'])}")
    print(f"succeeded runs with an actionable finding: {fmt(result['succeeded_with_actionable'])}")
    print(f"AUROC of risk_score against failure:       {result['auroc_risk_score']:.3f}")
    if args.group_by:
        print(f"\n{args.group_by:<16} {'runs':>4}  {'failed with one':<28} {'succeeded with one':<28} AUROC")
        for group, g in result["groups"].items():
            print(
                f"{group:<16} {g['runs']:>4}  {fmt(g['failed_with_actionable']):<28} "
                f"{fmt(g['succeeded_with_actionable']):<28} {g['auroc_risk_score']:.3f}"
            )


if __name__ == "__main__":
    main()
