"""Shared by the cumulative-action and delegated-disclosure tests: load a paraphrase trace, and
audit one trace with one detector (and optionally a policy), checking every citation resolves."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import load_policy
from auditor.audit.report.validator import validate_report
from ingest.canonical import iter_canonical, scan_canonical
from schemas import AuditReport, Trace

ROOT = Path(__file__).resolve().parents[1]
PARAPHRASE = ROOT / "tests" / "fixtures" / "paraphrase"
POLICIES = ROOT / "examples" / "policies"


def expectations(detector: str) -> dict[str, dict]:
    return json.loads((PARAPHRASE / detector / "expected.json").read_text())


def load_trace(path: Path) -> Trace:
    return Trace(header=scan_canonical(path).header, steps=list(iter_canonical(path)))


def audit(trace: Trace, detector: str, policy_file: Path | None = None) -> AuditReport:
    policy = load_policy(policy_file) if policy_file else None
    report = run_rules_audit(trace, "annotated", policy, [detector])
    check = validate_report(report.model_dump(mode="json"), trace)
    assert check.ok, check
    return report


def audit_fixture(detector: str, name: str) -> AuditReport:
    """Audit one paraphrase file with the policy its expectation names, if any."""
    expect = expectations(detector)[name]
    policy = PARAPHRASE / detector / expect["policy"] if "policy" in expect else None
    return audit(load_trace(PARAPHRASE / detector / name), detector, policy)


def topology_mismatches(detector: str) -> list[str]:
    """Paraphrase files whose findings differ between the annotated and the topology graph (these
    detectors decide from steps, arguments and edges, not from the annotation layer)."""
    out = []
    for name, expect in expectations(detector).items():
        trace = load_trace(PARAPHRASE / detector / name)
        policy = load_policy(PARAPHRASE / detector / expect["policy"]) if "policy" in expect else None
        seen = [
            [
                (f.disposition, f.first_anomalous_step, f.evidence)
                for f in run_rules_audit(trace, mode, policy, [detector]).findings
            ]
            for mode in ("annotated", "topology")
        ]
        if seen[0] != seen[1]:
            out.append(name)
    return out
