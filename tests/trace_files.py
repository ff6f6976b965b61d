"""What the importer tests share: a file's (first) trace read whole, JSON lines read and written
again (a real file changed for a case), and the coding finding such a case must file."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from ingest.registry import open_traces
from schemas import Finding, Trace


def trace_of(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_json_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def coding_finding(trace: Trace, *quoted: str) -> Finding:
    """The first coding-verification finding of the rules' review of ``trace``, in a report that
    validates, quoting each of ``quoted`` (the output it rests on, the claim it contradicts)."""
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    found = [f for f in report.findings if f.detector == "coding_verification"]
    assert found, [f.title for f in report.findings]
    for text in quoted:
        assert any(text in u.quote for u in found[0].evidence), text
    return found[0]
