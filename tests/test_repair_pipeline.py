"""The pipeline end to end: through the CLI from a report file, and on all five worlds (slow)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repair.pipeline import run_world
from repair.retest import RetestPlan

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(args: list[str], cwd: Path) -> Ran:
    """The CLI in-process (start-up paid once), with the entry point's one-line error handling."""
    from auditor.core.errors import AuditorError
    from auditor.surfaces.cli.main import app

    result = CliRunner().invoke(app, ["--store", f"sqlite:///{cwd / 'auditor.db'}", *args])
    if isinstance(result.exception, AuditorError):
        return Ran(result.exception.exit_code, result.stdout, f"error: {result.exception.one_line()}")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, "")


def _head(cwd: Path) -> int:
    from auditor.core.store import open_store

    store = open_store(f"sqlite:///{cwd / 'auditor.db'}")
    try:
        return store.last_position()
    finally:
        store.close()


def test_cli_propose_review_retest_decide_from_a_report_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    policy = str(REPO / "examples" / "policies" / "d1.yaml")
    assert run(["world", "run", "D1", "--episodes", "1", "--export", "exp"], tmp_path).returncode == 0
    trace = next((tmp_path / "exp" / "traces").glob("*.jsonl"))
    run(["review", str(trace), "--policy", policy, "-o", "rep.json", "-f", "json"], tmp_path)
    wf = str(REPO / "worlds" / "d1" / "workflow.yaml")
    no_policy = run(["repair", "propose", "rep.json", "--workflow", wf], tmp_path)
    assert (
        no_policy.returncode == 2 and "--policy" in no_policy.stderr and "Traceback" not in no_policy.stderr
    )
    head = _head(tmp_path)
    refused = run(
        ["repair", "propose", "rep.json", "--workflow", wf, "--policy", policy, "--out", "/dev/null"],
        tmp_path,
    )
    assert refused.returncode == 2 and "not a regular file" in refused.stderr
    assert _head(tmp_path) == head  # refused before the repair was stored
    proposed = run(
        ["repair", "propose", "rep.json", "--workflow", wf, "--policy", policy, "--json"], tmp_path
    )
    assert proposed.returncode == 0, proposed.stderr
    repair_id = json.loads(proposed.stdout)["repair_id"]
    reviewed = json.loads(run(["repair", "review", repair_id, "--json"], tmp_path).stdout)
    assert reviewed["rounds"][-1]["review"]["approved"] is True
    retest = json.loads(run(["repair", "retest", repair_id, "--episodes", "4", "--json"], tmp_path).stdout)
    assert retest["target"]["successes"] == 0 and retest["retain"] >= 0.95
    cfg = tmp_path / "cfg"
    subprocess.run(["git", "init", "-q", "-b", "main", str(cfg)], check=True)
    (cfg / "d1.yaml").write_text(Path(wf).read_text())
    git = ["git", "-C", str(cfg), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "d1.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "configs"], check=True)
    head = _head(tmp_path)
    refused = run(["repair", "decide", repair_id, "--repo", str(cfg), "--pr-out", "/dev/null"], tmp_path)
    assert refused.returncode == 2 and "not a regular file" in refused.stderr
    assert _head(tmp_path) == head  # refused before the decision was stored
    decided = run(
        ["repair", "decide", repair_id, "--repo", str(cfg), "--pr-out", "pr.md", "--json"], tmp_path
    )
    assert decided.returncode == 0, decided.stderr
    pr = json.loads(decided.stdout)["pr"]
    assert pr["branch"] == f"repair/{repair_id}" and pr["merged"] is False and pr["file"] == "d1.yaml"
    assert "## Retest" in (tmp_path / "pr.md").read_text()
    missing = run(["repair", "retest", "rep-unknown"], tmp_path)
    assert missing.returncode == 2 and "no repair 'rep-unknown'" in missing.stderr


@pytest.mark.slow
@pytest.mark.parametrize("world", ["A1", "B1", "C1", "D1", "F1"])
def test_end_to_end_on_each_world_drives_the_target_to_zero(world: str, sqlite_store, tmp_path: Path) -> None:
    res = run_world(
        sqlite_store, world, tmp_path / "configs", audit_episodes=20, retest=RetestPlan(20, 10_000)
    )
    assert res.retest is not None and res.retest.target.total == 20
    assert res.retest.target.successes == 0, res.retest.target
    assert res.retest.retain is not None and res.retest.retain >= 0.95
    assert res.decision.accepted, res.decision.reasons
    assert res.pr is not None and res.pr.branch == f"repair/{res.repair_id}"
