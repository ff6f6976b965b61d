"""What `auditor review -o` writes is what `auditor validate` accepts, for one trace or many."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import run
from tests.conftest import DATA, REPO


def test_a_multi_trace_review_writes_reports_that_validate(tmp_path: Path) -> None:
    runs = sorted((DATA / "taubench" / "airline" / "runs").glob("airline-task041-*.json"))[:2]
    assert len(runs) == 2
    lines = tmp_path / "runs.jsonl"
    lines.write_text("".join(json.dumps(json.loads(p.read_text())) + "\n" for p in runs))
    out = tmp_path / "reports.json"
    policy = REPO / "examples" / "policies" / "airline.yaml"
    done = run(["review", str(lines), "-o", str(out), "--policy", str(policy)], tmp_path)
    assert done.returncode in (0, 1), done.stderr
    reports = json.loads(out.read_text())
    assert isinstance(reports, list) and len(reports) == 2
    assert len({r["trace_id"] for r in reports}) == 2
    ids = [f["finding_id"] for r in reports for f in r["findings"]]
    assert len(ids) == len(set(ids)), "finding ids repeat across traces"
    checked = run(["validate", str(out), "--trace", str(lines), "--json"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    results = json.loads(checked.stdout)
    assert [r["ok"] for r in results] == [True, True]


def test_validate_names_a_report_whose_trace_is_not_in_the_file(tmp_path: Path) -> None:
    example = REPO / "examples" / "renewal_drift.jsonl"
    out = tmp_path / "r.json"
    done = run(["review", str(example), "-o", str(out)], tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(out.read_text())
    report["trace_id"] = "not-there"
    other = tmp_path / "two.json"
    other.write_text(json.dumps([report, report]))
    two_traces = tmp_path / "runs.jsonl"
    runs = sorted((DATA / "taubench" / "airline" / "runs").glob("airline-task041-*.json"))[:2]
    two_traces.write_text("".join(json.dumps(json.loads(p.read_text())) + "\n" for p in runs))
    checked = run(["validate", str(other), "--trace", str(two_traces)], tmp_path)
    assert checked.returncode == 2
    assert "not-there" in checked.stderr and "Traceback" not in checked.stderr


def test_a_review_names_each_phase_as_it_starts(tmp_path: Path) -> None:
    """What the terminal's progress line shows: storing, loading, the graph, each detector in
    turn, the outcome, validation and filing, per trace (prefixed when the file holds several)."""
    from auditor.audit.detectors import available_detectors
    from auditor.audit.review import review_file
    from auditor.core.store import open_store

    runs = sorted((DATA / "taubench" / "airline" / "runs").glob("airline-task041-*.json"))[:2]
    lines = tmp_path / "runs.jsonl"
    lines.write_text("".join(json.dumps(json.loads(p.read_text())) + "\n" for p in runs))
    phases: list[str] = []
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    outcomes = review_file(store, lines, phases=phases.append)
    names = available_detectors()
    per_trace = [
        "building the interaction graph",
        *(f"detector {i}/{len(names)}: {name}" for i, name in enumerate(names, 1)),
        "assessing the outcome",
        "validating the report",
        "filing the report",
    ]
    expected = ["reading and storing the input"]
    for n, o in enumerate(outcomes, 1):
        expected += [f"trace {n}/2: " + p for p in [f"loading {len(o.trace.steps):,} steps", *per_trace]]
    assert phases == expected
    single: list[str] = []
    review_file(store, REPO / "examples" / "renewal_drift.jsonl", phases=single.append)
    assert (
        single[:2] == ["reading and storing the input", "loading 8 steps"]
        and single[-1] == "filing the report"
    )
