"""`auditor triage DIR` on real τ-bench runs: ranked by risk, every report stored as review stores
it, bad files listed with file, line and field without stopping the others, and the same ranking
whether the runs are reviewed in one process or several (SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import run, run_process
from tests.conftest import DATA, REPO

TAU = DATA / "taubench" / "airline"
POLICY = REPO / "examples" / "policies" / "airline.yaml"
PLAIN = ["airline-task009-trial2.json", "airline-task001-trial0.json", "airline-task013-trial1.json"]
WITH_REWARD = ["airline-task000-trial0.json", "airline-task007-trial2.json"]

pytestmark = pytest.mark.skipif(not TAU.is_dir(), reason="τ-bench runs not present (../shared/data)")


def _reward(name: str) -> float:
    with (TAU / "outcomes.csv").open(newline="") as f:
        return next(float(r["reward"]) for r in csv.DictReader(f) if r["file"] == name)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Five real runs (two carrying τ-bench's reward beside their messages, as the harness writes
    it: a recorded outcome), the shipped example's opening with its third line's step id gone,
    and a note that is no trace."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in PLAIN:
        shutil.copy(TAU / "runs" / name, runs / name)
    for name in WITH_REWARD:
        doc = json.loads((TAU / "runs" / name).read_text(encoding="utf-8"))
        (runs / name).write_text(json.dumps({"reward": _reward(name), **doc}), encoding="utf-8")
    lines = (REPO / "examples" / "renewal_drift.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    step = json.loads(lines[2])
    del step["step_id"]
    (runs / "broken.jsonl").write_text("\n".join([*lines[:2], json.dumps(step)]) + "\n", encoding="utf-8")
    (runs / "README.txt").write_text("last night's runs\n")
    return runs


def _triage(folder: Path, cwd: Path, *extra: str, process: bool = False) -> dict:
    proc = (run_process if process else run)(
        ["triage", str(folder), "--policy", str(POLICY), "--json", *extra], cwd
    )
    assert proc.returncode == 2, proc.stderr  # a file failed, the rest were reviewed
    return json.loads(proc.stdout)


def test_triage_ranks_runs_stores_each_report_and_lists_bad_files(folder, tmp_path):
    result = _triage(folder, tmp_path, "--jobs", "1")
    runs = result["runs"]
    assert result["totals"] == {"files": 7, "runs": 5, "failed": 1, "skipped": 1}
    assert sorted(r["file"] for r in runs) == sorted(PLAIN + WITH_REWARD)
    scores = [r["risk_score"] for r in runs]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    recorded = {r["file"]: r["outcome"] for r in runs}
    assert recorded == {**dict.fromkeys(PLAIN), "airline-task000-trial0.json": "failed",
                        "airline-task007-trial2.json": "succeeded"}  # fmt: skip
    broken, note = sorted(result["not_reviewed"], key=lambda u: u["skipped"])
    assert broken["file"] == "broken.jsonl" and not broken["skipped"]
    assert "broken.jsonl, line 3, field 'step_id'" in broken["reason"]
    assert note == {"file": "README.txt", "reason": note["reason"], "skipped": True}

    from auditor.audit.triage import top_finding
    from auditor.core.store import open_store
    from auditor.core.store.reports import load_report

    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    try:
        for row in runs:
            report = load_report(store, row["report_id"])
            assert report.trace_id == row["trace_id"] and report.risk_score == row["risk_score"]
            top = top_finding(report)
            assert row["top_finding"] == (top.title if top else None)
            failed = report.outcome.value.value == "failed"
            assert (row["agent"], row["step_id"]) == (
                (report.attribution.agent, report.attribution.step_id) if failed else (None, None)
            )
    finally:
        store.close()
    riskiest = runs[0]
    assert riskiest["top_finding"] and riskiest["agent"] == "assistant" and riskiest["step_id"]


def test_the_table_shows_the_top_runs_and_why_files_failed(folder, tmp_path):
    ranked = [r["file"] for r in _triage(folder, tmp_path, "--jobs", "1")["runs"]]
    proc = run(["triage", str(folder), "--policy", str(POLICY), "--top", "2", "--jobs", "1"], tmp_path)
    assert proc.returncode == 2
    assert "2 of 5 run(s), riskiest first" in proc.stdout
    assert proc.stdout.index(ranked[0]) < proc.stdout.index(ranked[1])
    assert not any(name in proc.stdout for name in ranked[2:])
    assert "failed (not reviewed)" in proc.stdout and "line 3, field 'step_id'" in proc.stdout
    assert "README.txt" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr


def test_csv_holds_the_ranked_rows(folder, tmp_path):
    ranked = _triage(folder, tmp_path, "--jobs", "1")["runs"]
    proc = run(
        ["triage", str(folder), "--policy", str(POLICY), "--csv", "--top", "3", "--jobs", "1"], tmp_path
    )
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["file"] for r in rows] == [r["file"] for r in ranked[:3]]
    assert [float(r["risk_score"]) for r in rows] == [r["risk_score"] for r in ranked[:3]]
    assert "failed: " in proc.stderr and "broken.jsonl" in proc.stderr


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_worker_processes_rank_as_one_process_does(folder, tmp_path, backend, request):
    """Two worker processes appending to one store (a real interpreter, forked workers) give the
    ranking and reports one process gives."""
    (tmp_path / "serial").mkdir()
    serial = _triage(folder, tmp_path / "serial", "--jobs", "1")
    url = (
        f"sqlite:///{tmp_path / 'parallel.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_schema_url")
    )
    proc = run_process(
        ["--store", url, "triage", str(folder), "--policy", str(POLICY), "--json", "--jobs", "2"], tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    parallel = json.loads(proc.stdout)
    keys = ("file", "trace_id", "risk_score", "top_finding", "agent", "step_id", "outcome")
    assert [[r[k] for k in keys] for r in parallel["runs"]] == [[r[k] for k in keys] for r in serial["runs"]]
    assert parallel["not_reviewed"] == serial["not_reviewed"]
    verify = run_process(["--store", url, "store", "verify"], tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_file_is_no_folder_and_an_unknown_importer_is_one_error(folder, tmp_path):
    proc = run(["triage", str(TAU / "runs" / PLAIN[0])], tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "is not a folder" in proc.stderr
    proc = run(["triage", str(folder), "--input-format", "nope"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown format 'nope'" in proc.stderr
    assert not (tmp_path / "auditor.db").exists()  # nothing was reviewed or stored
