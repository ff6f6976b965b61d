"""`auditor review` end to end on the shipped example: exit codes, storage, idempotency, outputs."""

from __future__ import annotations

import json

from tests.cli_helpers import events_in, run
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


def test_review_files_a_realized_drift_and_exits_1(tmp_path):
    proc = run(["review", str(EXAMPLE)], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "information_state_drift" in proc.stdout and "realized" in proc.stdout
    before = events_in(tmp_path)
    again = run(["review", str(EXAMPLE), "--json"], tmp_path)
    assert again.returncode == 1
    assert events_in(tmp_path) == before  # same trace, same audit: nothing new appended
    report = json.loads(again.stdout)
    assert report["contract_version"] == "v3" and report["findings"][0]["disposition"] == "realized"


def test_review_writes_json_that_validates(tmp_path):
    out = tmp_path / "out" / "report.json"
    assert run(["review", str(EXAMPLE), "-o", str(out)], tmp_path).returncode == 1
    check = run(["validate", str(out), "--trace", str(EXAMPLE), "--json"], tmp_path)
    assert check.returncode == 0, check.stdout
    assert json.loads(check.stdout)["units_resolved"] >= 3
    stored = run(["validate", str(out), "--trace", "example-renewal-drift"], tmp_path)
    assert stored.returncode == 0 and "valid" in stored.stdout


def test_tampered_report_fails_validation(tmp_path):
    out = tmp_path / "report.json"
    run(["review", str(EXAMPLE), "-o", str(out)], tmp_path)
    data = json.loads(out.read_text())
    data["findings"][0]["evidence"][0]["quote"] = "the VP approved it"
    out.write_text(json.dumps(data))
    proc = run(["validate", str(out), "--trace", str(EXAMPLE)], tmp_path)
    assert proc.returncode == 1 and "FAIL" in proc.stdout


def test_bad_input_exits_2_and_stores_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step_id": "s0", "index": 0}\n')
    proc = run(["review", str(bad), "-o", str(tmp_path / "r.json")], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(bad) in proc.stderr
    assert not (tmp_path / "r.json").exists()
    assert events_in(tmp_path) == 0
    assert run(["review", str(EXAMPLE), "--graph", "sideways"], tmp_path).returncode == 2


def test_topology_mode_is_recorded(tmp_path):
    proc = run(["review", str(EXAMPLE), "--graph", "topology", "--json"], tmp_path)
    report = json.loads(proc.stdout)
    assert report["graph_mode"] == "topology"
    assert any("annotated graph" in n for n in report["notes"])
