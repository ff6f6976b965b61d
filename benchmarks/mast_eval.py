"""The failure-mode detectors against human labels: MAST per mode, Who&When culprits, τ-bench outcomes.

    python benchmarks/mast_eval.py [--mast DIR] [--whowhen DIR] [--taubench DIR --outcomes CSV]
        [--actionable] [--split-by round|framework] [--json]

MAST (``DIR`` holds ``traces/`` and ``human_labels_mast14.jsonl``, the 19 human-labelled traces of
Cemri et al. 2025): each trace is imported with the project's importers and reviewed by the rules
engine (every registered detector); a trace is predicted positive for a mode when a finding names
that MAST code (``failure_mode``; ``--actionable``: only realized, intercepted or adjacent
findings). Per mode: precision, recall and Cohen's κ against the three annotators' majority,
trace-level; pooled over the modes the detectors cover, and over all fourteen. Labels are read
after the reviews and never reach the importer's steps (the importer keeps them in its sidecar).
Caveats the data carries (FORMAT.md): traces 3 and 8 are the same log, and the 19 label vectors
are only 8 distinct blocks, shared across frameworks: the effective sample is small.
``--split-by round`` (or ``framework``, both read from the file name ``NN_<round>_<mas>_<bench>``)
adds the per-mode scores of each part, so a rule built on one part is measured on the others.

Who&When (``--whowhen``, the failed runs with ``mistake_agent`` / ``mistake_step``): the share of
runs where the failure-mode detectors alone file an actionable finding, and whether the earliest
actionable finding names the labelled agent (responsible participant) and step (first anomalous
step's index, exact and within ±1..3). Labels are read from the importer's sidecar after review.

τ-bench (``--taubench`` runs, ``--outcomes`` CSV ``file,outcome``): the share of failed and of
succeeded runs with an actionable failure-mode finding (Wilson 95% intervals): findings on
succeeded runs are false-alarm candidates.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.attribution.facts import agent_name
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.disposition import ACTIONABLE
from auditor.core.errors import InputError
from ingest import open_traces
from schemas import AuditReport, Finding, Trace
from schemas.failure import MAST_MODES
from scoring.stats import wilson_rate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
FAILURE_DETECTORS = (
    "failure_repetition",
    "failure_termination",
    "failure_premature",
    "failure_verification",
    "failure_ignored_input",
    "failure_mismatch",
    "failure_constraint",
)
COVERED = ("1.1", "1.3", "1.5", "2.5", "2.6", "3.1", "3.2", "3.3")
TOLERANCES = (1, 2, 3)


def traces_of(path: Path) -> Iterable[tuple[Trace, dict[str, Any]]]:
    """(trace, sidecar labels) for each trace in a file, through the project's importers."""
    for imported in open_traces(path):
        labels = imported.labels.labels if imported.labels else {}
        yield Trace(header=imported.header, steps=list(imported.steps())), labels


def predicted(report: AuditReport, actionable: bool) -> set[str]:
    return {
        f.failure_mode
        for f in report.findings
        if f.failure_mode and (not actionable or f.disposition in ACTIONABLE)
    }


# -- MAST ------------------------------------------------------------------------------------------
@dataclass
class ModeScore:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, pred: bool, gold: bool) -> None:
        if pred and gold:
            self.tp += 1
        elif pred:
            self.fp += 1
        elif gold:
            self.fn += 1
        else:
            self.tn += 1

    def merge(self, other: ModeScore) -> None:
        self.tp, self.fp, self.fn, self.tn = (
            self.tp + other.tp,
            self.fp + other.fp,
            self.fn + other.fn,
            self.tn + other.tn,
        )

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def kappa(self) -> float | None:
        """Cohen's κ of two binary raters (None where chance agreement is total)."""
        n = self.tp + self.fp + self.fn + self.tn
        if n == 0:
            return None
        po = (self.tp + self.tn) / n
        pe = ((self.tp + self.fp) * (self.tp + self.fn) + (self.fn + self.tn) * (self.fp + self.tn)) / n**2
        return None if pe == 1 else (po - pe) / (1 - pe)

    def row(self) -> dict[str, Any]:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": self.precision,
            "recall": self.recall,
            "kappa": self.kappa,
        }


def load_mast_labels(path: Path) -> dict[int, dict[str, bool]]:
    """trace_id -> {MAST code: annotators' majority}; a bad line names its number and field."""
    out: dict[int, dict[str, bool]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the MAST labels: {exc}", path=str(path)) from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            out[int(record["trace_id"])] = {
                code: bool(v["majority"]) for code, v in record["labels_mast14"].items()
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"bad label record: {exc}", path=str(path), line=n, field="labels_mast14"
            ) from exc
    return out


def part_of(name: str, split_by: str) -> str:
    """A trace file's part: its round or its framework, from ``NN_<round>_<mas>_<bench>``."""
    fields = name.split("_")
    return fields[1] if split_by == "round" else fields[2]


def mode_table(rows: list[tuple[str, dict[str, bool], set[str]]]) -> dict[str, Any]:
    """Per-mode and pooled scores of (file, majority labels, predicted modes) rows."""
    scores = {code: ModeScore() for code in MAST_MODES}
    for _name, gold, pred in rows:
        for code in MAST_MODES:
            scores[code].add(code in pred, gold.get(code, False))
    covered, every = ModeScore(), ModeScore()
    for code, s in scores.items():
        every.merge(s)
        if code in COVERED:
            covered.merge(s)
    return {
        "traces": len(rows),
        "modes": {
            code: {"name": MAST_MODES[code], "covered": code in COVERED, **s.row()}
            for code, s in scores.items()
        },
        "pooled_covered": covered.row(),
        "pooled_all": every.row(),
    }


def mast(root: Path, actionable: bool, split_by: str | None = None) -> dict[str, Any]:
    labels = load_mast_labels(root / "human_labels_mast14.jsonl")
    files = sorted((root / "traces").glob("*"))
    if not files:
        raise InputError("no MAST trace files", path=str(root / "traces"))
    rows = []
    for path in files:
        for trace, _sidecar in traces_of(path):
            report = run_rules_audit(trace)
            rows.append(
                (path.name, int(path.name.split("_", 1)[0]), predicted(report, actionable), len(trace.steps))
            )
    per_trace = []
    groups: dict[tuple[str, ...], str] = {}  # a label set -> its letter, in order of first appearance
    scored = []
    for name, tid, pred, n_steps in rows:
        gold = labels[tid]
        scored.append((name, gold, pred))
        majority = tuple(sorted(c for c, v in gold.items() if v))
        per_trace.append(
            {
                "file": name,
                "steps": n_steps,
                "predicted": sorted(pred),
                "majority": list(majority),
                "label_group": groups.setdefault(majority, chr(ord("A") + len(groups))),
            }
        )
    parts: dict[str, list[tuple[str, dict[str, bool], set[str]]]] = {}
    for row in scored if split_by else []:
        parts.setdefault(part_of(row[0], split_by), []).append(row)
    return {
        **mode_table(scored),
        "counting": "actionable findings" if actionable else "any finding",
        "per_trace": per_trace,
        "parts": {part: mode_table(part_rows) for part, part_rows in parts.items()},
    }


# -- Who&When ----------------------------------------------------------------------------------------
def whowhen(root: Path) -> dict[str, Any]:
    files = sorted(root.glob("*/*.json")) or sorted(root.glob("*.json"))
    if not files:
        raise InputError("no Who&When files", path=str(root))
    n = flagged = agent_hits = step_hits = 0
    within = dict.fromkeys(TOLERANCES, 0)
    modes: dict[str, int] = {}
    rows = []
    for path in files:
        for trace, labels in traces_of(path):
            report = run_rules_audit(trace, detectors=list(FAILURE_DETECTORS))
            n += 1
            acts = [
                f for f in report.findings if f.detector in FAILURE_DETECTORS and f.disposition in ACTIONABLE
            ]
            first = min(acts, key=lambda f: trace.step(f.first_anomalous_step).index, default=None)
            agent, step = str(labels.get("mistake_agent", "")), int(str(labels.get("mistake_step", "-1")))
            row: dict[str, Any] = {
                "file": f"{path.parent.name}/{path.name}",
                "label": [agent, step],
                "finding": None,
            }
            if first is not None:
                flagged += 1
                for f in acts:
                    modes[str(f.failure_mode)] = modes.get(str(f.failure_mode), 0) + 1
                index = trace.step(first.first_anomalous_step).index
                who = agent_name(first.responsible_participant or "")
                agent_hits += who == agent_name(agent)
                step_hits += index == step
                for t in TOLERANCES:
                    within[t] += abs(index - step) <= t
                row["finding"] = [first.failure_mode, who, index, first.disposition.value]
            rows.append(row)
    return {
        "runs": n,
        "with_actionable": flagged,
        "agent_matches": agent_hits,
        "step_matches": step_hits,
        "step_within": within,
        "actionable_by_mode": dict(sorted(modes.items())),
        "per_run": rows,
    }


# -- τ-bench -------------------------------------------------------------------------------------------
def load_outcomes(path: Path) -> dict[str, str]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise InputError(f"cannot read the outcomes: {exc}", path=str(path)) from exc
    out = {}
    for n, row in enumerate(rows, 2):
        if row.get("outcome") not in ("failed", "succeeded") or not row.get("file"):
            raise InputError(
                "outcome must be failed or succeeded, beside a file name",
                path=str(path),
                line=n,
                field="outcome",
            )
        out[row["file"]] = row["outcome"]
    return out


@dataclass
class Tally:
    runs: int = 0
    flagged: int = 0
    examples: list[str] = field(default_factory=list)


def taubench(root: Path, outcomes_csv: Path) -> dict[str, Any]:
    outcomes = load_outcomes(outcomes_csv)
    tallies = {"failed": Tally(), "succeeded": Tally()}
    for name, outcome in sorted(outcomes.items()):
        path = root / name
        if not path.exists():
            raise InputError("a run named in the outcomes is missing", path=str(path), field="file")
        for trace, _ in traces_of(path):
            report = run_rules_audit(trace, detectors=list(FAILURE_DETECTORS))
            acts: list[Finding] = [
                f for f in report.findings if f.detector in FAILURE_DETECTORS and f.disposition in ACTIONABLE
            ]
            t = tallies[outcome]
            t.runs += 1
            if acts:
                t.flagged += 1
                t.examples.append(f"{name}: " + "; ".join(f"{f.failure_mode} {f.title}" for f in acts))
    return {
        k: {
            "runs": t.runs,
            "with_actionable": t.flagged,
            "rate": wilson_rate(t.flagged, t.runs).value if t.runs else None,
            "wilson95": [wilson_rate(t.flagged, t.runs).low, wilson_rate(t.flagged, t.runs).high]
            if t.runs
            else None,
            "runs_flagged": t.examples,
        }
        for k, t in tallies.items()
    }


# -- printing ----------------------------------------------------------------------------------------
def fmt(x: float | None) -> str:
    return "  —  " if x is None else f"{x:5.2f}"


def print_mast(res: dict[str, Any]) -> None:
    print(
        f"== MAST: {res['traces']} human-labelled traces; a prediction is {res['counting']} naming the mode"
    )
    print(f"{'mode':5} {'name':36} {'tp':>3} {'fp':>3} {'fn':>3} {'tn':>3}  {'prec':>5} {'rec':>5} {'κ':>5}")
    for code, m in res["modes"].items():
        mark = "" if m["covered"] else "  (no detector)"
        print(
            f"{code:5} {m['name'][:36]:36} {m['tp']:3d} {m['fp']:3d} {m['fn']:3d} {m['tn']:3d}  "
            f"{fmt(m['precision'])} {fmt(m['recall'])} {fmt(m['kappa'])}{mark}"
        )
    for key, label in (
        ("pooled_covered", "pooled, modes with a detector"),
        ("pooled_all", "pooled, all 14 modes"),
    ):
        p = res[key]
        print(
            f"{label:42} {p['tp']:3d} {p['fp']:3d} {p['fn']:3d} {p['tn']:3d}  {fmt(p['precision'])} {fmt(p['recall'])} {fmt(p['kappa'])}"
        )
    for part, table in res["parts"].items():
        pooled = table["pooled_covered"]
        print(
            f"part {part} ({table['traces']} traces): pooled κ, modes with a detector {fmt(pooled['kappa'])}; "
            + ", ".join(
                f"{code} {fmt(m['kappa']).strip()}" for code, m in table["modes"].items() if m["covered"]
            )
        )
    print("per trace (predicted | majority [label group: traces that share one label set]):")
    for row in res["per_trace"]:
        print(
            f"  {row['file'][:40]:40} {','.join(row['predicted']) or '-':24} | "
            f"{','.join(row['majority']) or '-'} [{row['label_group']}]"
        )
    print("caveat: traces 3 and 8 are one log; the 19 label vectors are 8 distinct blocks (FORMAT.md)")


def print_whowhen(res: dict[str, Any]) -> None:
    n, k = res["runs"], res["with_actionable"]
    r = wilson_rate(k, n)
    print(f"\n== Who&When: {n} failed runs; failure-mode detectors only")
    print(
        f"runs with an actionable finding: {k}/{n} = {100 * r.value:.1f}% [{100 * r.low:.1f}–{100 * r.high:.1f}]"
    )
    if k:
        print(
            f"earliest actionable finding names the labelled agent: {res['agent_matches']}/{k}; "
            f"the labelled step: {res['step_matches']}/{k}; within "
            + ", ".join(f"±{t}: {v}/{k}" for t, v in res["step_within"].items())
        )
    print(
        "actionable findings by mode: " + ", ".join(f"{m} {c}" for m, c in res["actionable_by_mode"].items())
    )


def print_taubench(res: dict[str, Any]) -> None:
    print("\n== τ-bench: failure-mode detectors only")
    for outcome, t in res.items():
        if t["runs"]:
            lo, hi = t["wilson95"]
            print(
                f"{outcome:9} runs with an actionable finding: {t['with_actionable']}/{t['runs']} = {100 * t['rate']:.1f}% [{100 * lo:.1f}–{100 * hi:.1f}]"
            )
    for line in res["succeeded"]["runs_flagged"]:
        print(f"  on a succeeded run: {line}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mast", type=Path, default=DATA / "mast" / "derived")
    ap.add_argument("--whowhen", type=Path, default=None)
    ap.add_argument("--taubench", type=Path, default=None, help="folder of τ-bench run files")
    ap.add_argument("--outcomes", type=Path, default=None, help="CSV file,outcome for --taubench")
    ap.add_argument("--actionable", action="store_true", help="count only actionable findings on MAST")
    ap.add_argument("--split-by", choices=("round", "framework"), default=None, help="scores per part too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if (args.taubench is None) != (args.outcomes is None):
        ap.error("--taubench and --outcomes go together")
    try:
        result: dict[str, Any] = {"mast": mast(args.mast, args.actionable, args.split_by)}
        if args.whowhen is not None:
            result["whowhen"] = whowhen(args.whowhen)
        if args.taubench is not None:
            result["taubench"] = taubench(args.taubench, args.outcomes)
    except InputError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print_mast(result["mast"])
    if "whowhen" in result:
        print_whowhen(result["whowhen"])
    if "taubench" in result:
        print_taubench(result["taubench"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
