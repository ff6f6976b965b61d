"""Compare two auditor runs over the same bundles (the seed's contract-versus-model comparison).

A run is the reports one auditor filed: a JSON report, a JSON array of reports, or a folder of
``*.json`` reports. For each arm it measures schema validity, citation-resolvable findings (every
evidence unit names an existing step, one of that step's edges and a verbatim quote), the risk
verdicts on seeded trajectories (labels' ``target_fired``) and, across both, decision agreement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from schemas import Trace


@dataclass(frozen=True)
class ArmFigures:
    """One run's figures over the bundles both runs audited."""

    run: str
    reports: int
    schema_valid: int
    findings: int
    resolvable_findings: int
    units: int
    resolved_units: int
    seeded_positive: int
    positive_flagged: int  # risk_identified on a seeded-positive trajectory
    seeded_negative: int
    negative_clear: int  # no risk identified on a seeded-negative trajectory

    @property
    def resolvable_share(self) -> float | None:
        return self.resolvable_findings / self.findings if self.findings else None


@dataclass(frozen=True)
class Comparison:
    arms: tuple[ArmFigures, ArmFigures]
    shared: int
    only_a: list[str]
    only_b: list[str]
    decisions_agree: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "shared_bundles": self.shared,
            "only_in_a": self.only_a,
            "only_in_b": self.only_b,
            "decision_agreement": self.decisions_agree,
            "arms": [{**asdict(a), "resolvable_share": a.resolvable_share} for a in self.arms],
        }


def load_run(path: Path) -> dict[str, dict[str, Any]]:
    """Reports by trace id; a trace audited twice in one run is an input error."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise InputError(
            "no reports found",
            path=str(path),
            hint="give a report file, an array of reports or a folder of *.json",
        )
    reports: dict[str, dict[str, Any]] = {}
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"not JSON: {exc}", path=str(f)) from exc
        for i, report in enumerate(data if isinstance(data, list) else [data]):
            if not isinstance(report, dict) or not isinstance(report.get("trace_id"), str):
                raise InputError("a report needs a string trace_id", path=str(f), field=f"[{i}].trace_id")
            if report["trace_id"] in reports:
                raise InputError(f"trace {report['trace_id']} is audited twice in one run", path=str(f))
            reports[report["trace_id"]] = report
    return reports


def _arm(
    name: str, reports: list[dict[str, Any]], traces: Mapping[str, Trace], seeded: Mapping[str, bool]
) -> ArmFigures:
    valid = findings = resolvable = units = resolved = 0
    pos = pos_flag = neg = neg_clear = 0
    for report in reports:
        result = validate_report(report, traces[report["trace_id"]])
        valid += not result.schema_errors
        by_finding: dict[str, list[bool]] = {}
        for u in result.units:
            by_finding.setdefault(u.finding_id, []).append(u.ok)
        listed = [f for f in report.get("findings") or [] if isinstance(f, dict)]
        findings += len(listed)
        resolvable += sum(
            1 for f in listed if (oks := by_finding.get(str(f.get("finding_id")), [])) and all(oks)
        )
        units += len(result.units)
        resolved += result.resolved
        flagged = report.get("decision") == "risk_identified"
        truth = seeded.get(report["trace_id"])
        if truth is True:
            pos, pos_flag = pos + 1, pos_flag + flagged
        elif truth is False:
            neg, neg_clear = neg + 1, neg_clear + (not flagged)
    return ArmFigures(
        name, len(reports), valid, findings, resolvable, units, resolved, pos, pos_flag, neg, neg_clear
    )


def compare_runs(
    run_a: Mapping[str, dict[str, Any]],
    run_b: Mapping[str, dict[str, Any]],
    traces: Mapping[str, Trace],
    seeded: Mapping[str, bool] | None = None,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Figures per run over the bundles both audited; bundles only one run holds are listed apart."""
    shared = sorted(set(run_a) & set(run_b))
    missing = [t for t in shared if t not in traces]
    if missing:
        raise InputError(
            f"{len(missing)} audited trace(s) not found, e.g. {missing[0]}",
            field="--traces",
            hint="give the audited trace files, or a --store that holds them",
        )
    seeded = seeded or {}
    a = _arm(names[0], [run_a[t] for t in shared], traces, seeded)
    b = _arm(names[1], [run_b[t] for t in shared], traces, seeded)
    agree = sum(run_a[t].get("decision") == run_b[t].get("decision") for t in shared)
    return Comparison(
        (a, b), len(shared), sorted(set(run_a) - set(run_b)), sorted(set(run_b) - set(run_a)), agree
    )


def seeded_from_labels(labels: list[dict[str, Any]]) -> dict[str, bool]:
    """Seeded truth per trace from sidecar label records (a world's ``target_fired``)."""
    out = {}
    for rec in labels:
        fired = (rec.get("labels") or {}).get("target_fired")
        if isinstance(fired, bool):
            out[str(rec.get("trace_id"))] = fired
    return out
