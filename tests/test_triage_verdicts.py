"""`auditor triage DIR --outcomes FILE` on real mini-SWE-agent runs and SWE-bench's verdicts: each
file gets its verdict by name, known failures are attributed, and the agreement it prints is
the one the review gives blind (the verdicts never reach a detector); a bad verdicts file is
refused whole, with its line and column, before any run is reviewed."""

from __future__ import annotations

import csv
import json
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.audit.verdicts import Verdicts, load_verdicts
from auditor.core.errors import InputError
from schemas.failure import OutcomeValue
from scoring.stats.auroc import auroc
from tests.cli_helpers import run
from tests.conftest import REPO
from tests.damage import damaged

REAL = REPO / "tests" / "fixtures" / "real"
VERDICTS = REAL / "swebench_verdicts.csv"
RUNS = REAL / "mini-swe-agent"
RECORDED_HERE = "django_scripted_narrow_rerun_failing.traj.json"  # a run no harness judged


def _resolved() -> dict[str, bool]:
    with VERDICTS.open(newline="") as f:
        return {r["instance_id"]: r["resolved"] == "True" for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight of the real runs (both verdicts), one in a subfolder as some harnesses lay them out,
    and a run recorded here that no verdict names."""
    runs = tmp_path_factory.mktemp("runs")
    names = sorted(_resolved())[:8]
    for name in names[:-1]:
        shutil.copy(RUNS / f"{name}.traj.json", runs / f"{name}.traj.json")
    (runs / names[-1]).mkdir()
    shutil.copy(RUNS / f"{names[-1]}.traj.json", runs / names[-1] / f"{names[-1]}.traj.json")
    shutil.copy(RUNS / RECORDED_HERE, runs / RECORDED_HERE)
    return runs


def _triage(folder: Path, cwd: Path, *extra: str) -> dict:
    cwd.mkdir(exist_ok=True)
    proc = run(["triage", str(folder), "-r", "--json", "--jobs", "1", *extra], cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def judged(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """The folder triaged blind and with the verdicts, each into a store of its own."""
    blind = _triage(folder, tmp_path_factory.mktemp("blind"))
    verdicts = folder.parent / "verdicts.csv"
    rows = VERDICTS.read_text(encoding="utf-8") + "django__django-99999,False\n"  # judged, not here
    verdicts.write_text(rows, encoding="utf-8")
    return blind, _triage(folder, tmp_path_factory.mktemp("judged"), "--outcomes", str(verdicts))


def _stem(file: str) -> str:
    return Path(file).name.removesuffix(".traj.json")


def test_each_file_gets_its_verdict_and_known_failures_are_attributed(judged):
    blind, result = judged
    resolved = _resolved()
    for row in result["runs"]:
        if _stem(row["file"]) not in resolved:
            assert row["file"] == RECORDED_HERE and row["outcome"] is None
            continue
        assert row["outcome"] == ("succeeded" if resolved[_stem(row["file"])] else "failed")
        if row["outcome"] == "failed":
            assert row["agent"] == "agent" and row["step_id"], row
    assert any("/" in r["file"] for r in result["runs"])  # the subfolder's run was matched too
    unattributed = [r for r in blind["runs"] if r["step_id"] is None]
    assert unattributed  # blind, the review attributes only what the runs themselves show failed


def test_the_agreement_is_what_the_review_gives_blind(judged):
    """The risk scores and the detectors' flags with the verdicts given equal those without:
    nothing the agreement counts has read a verdict."""
    blind, result = judged
    resolved = _resolved()
    seen = {r["file"]: r for r in blind["runs"]}
    for row in result["runs"]:
        assert (row["risk_score"], row["flagged"]) == (
            seen[row["file"]]["risk_score"],
            seen[row["file"]]["flagged"],
        )
    judged_rows = [r for r in blind["runs"] if _stem(r["file"]) in resolved]
    failed = [r for r in judged_rows if not resolved[_stem(r["file"])]]
    passed = [r for r in judged_rows if resolved[_stem(r["file"])]]
    agreement = result["agreement"]
    assert agreement["failed_runs_flagged"]["runs"] == len(failed) > 0
    assert agreement["failed_runs_flagged"]["flagged"] == sum(r["flagged"] for r in failed)
    assert agreement["succeeded_runs_flagged"]["runs"] == len(passed) > 0
    assert agreement["succeeded_runs_flagged"]["flagged"] == sum(r["flagged"] for r in passed)
    expected = auroc([r["risk_score"] for r in failed], [r["risk_score"] for r in passed])
    assert agreement["auroc_risk_score"] == expected
    low, high = agreement["auroc_interval"]
    assert low <= expected <= high
    assert agreement["runs_without_verdict"] == [RECORDED_HERE]
    named = set(resolved) - {_stem(r["file"]) for r in judged_rows}
    assert agreement["verdicts_naming_no_run"] == sorted(named | {"django__django-99999"})


def test_the_table_prints_the_agreement_and_the_roc_curve_is_drawn(folder, tmp_path):
    plot = tmp_path / "figures" / "roc.png"
    plot.parent.mkdir()
    args = ["triage", str(folder), "-r", "--jobs", "1", "--outcomes", str(VERDICTS), "--plot", str(plot)]
    proc = run(args, tmp_path)
    assert proc.returncode == 1, proc.stderr  # a run has an actionable finding
    assert "agreement with" in proc.stdout and "failed runs a detector flagged" in proc.stdout
    assert "AUROC of risk_score" in proc.stdout and "runs without a verdict" in proc.stdout
    assert RECORDED_HERE in proc.stdout.split("agreement with", 1)[1]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and [p.name for p in plot.parent.iterdir()] == [
        "roc.png"
    ]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--plot", "roc.png"], "--plot draws the ranking against recorded verdicts: give --outcomes"),
        (["--outcomes", str(VERDICTS), "--plot", "roc.txt"], "name a .png, .svg or .pdf file, not 'roc.txt'"),
        (["--outcomes", str(VERDICTS), "--plot", "missing/roc.png"], "no such folder for the figure"),
    ],
)
def test_a_figure_that_cannot_be_drawn_is_refused_before_reviewing(folder, tmp_path, extra, says):
    proc = run(["triage", str(folder), "-r", *extra], tmp_path)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert not (tmp_path / "auditor.db").exists()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_swebench_report_json_reads_as_the_csv_does(tmp_path):
    """SWE-bench's harness report (schema_version 2): an empty patch or an evaluation error is
    not resolved; an incomplete instance has no verdict. The bash-only leaderboard's
    per_instance_details.json (mini-SWE-agent's submissions) gives each id its boolean."""
    resolved = _resolved()
    report = {
        "resolved_ids": sorted(k for k, v in resolved.items() if v),
        "unresolved_ids": sorted(k for k, v in resolved.items() if not v)[1:],
        "empty_patch_ids": sorted(k for k, v in resolved.items() if not v)[:1],
        "error_ids": ["django__django-11001"],
        "incomplete_ids": ["django__django-11002"],
        "schema_version": 2,
    }
    from_json = load_verdicts(_write(tmp_path, "gemini.run1.json", json.dumps(report)))
    with pytest.raises(InputError, match="a JSON verdicts file has no columns to group by"):
        load_verdicts(tmp_path / "gemini.run1.json", "repo")
    from_csv = load_verdicts(VERDICTS)
    assert dict(from_json.by_name) == {**from_csv.by_name, "django__django-11001": OutcomeValue.failed}
    details = {name: {"cost": 0.7, "api_calls": 32, "resolved": ok} for name, ok in resolved.items()}
    from_details = load_verdicts(_write(tmp_path, "per_instance_details.json", json.dumps(details)))
    assert dict(from_details.by_name) == dict(from_csv.by_name)


def test_lookup_tries_the_path_then_the_name_then_the_name_without_extensions():
    verdicts = Verdicts("v.csv", {"a.traj": OutcomeValue.failed, "b": OutcomeValue.succeeded})
    assert verdicts.lookup("x/a.traj.json") == ("a.traj", OutcomeValue.failed)
    assert verdicts.lookup("b.traj.json") == ("b", OutcomeValue.succeeded)
    assert verdicts.lookup("sub/b/run.json") is None  # a folder's name is not the run's


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("v.csv", "instance_id,status\nx,failed\n", "line 1: no column for a verdict (columns: instance_id, status)"),
        ("v.csv", "id,outcome\nx,failed\n", "line 1: no column for a run's name (columns: id, outcome)"),
        ("v.csv", "file,outcome\na,failed\nb,passed\n", "line 3, field 'outcome': 'passed' is not one of"),
        ("v.csv", "file,resolved\na,True\n,False\n", "line 3, field 'file': a verdict names no run"),
        ("v.csv", "file,outcome\na,failed\nb,failed\na,succeeded\n", "line 4, field 'outcome': 'a' has another verdict on line 2"),
        ("v.json", '{"resolved_ids": ["a"], "unresolved_ids": "b"}', "field 'unresolved_ids': must be a list"),
        ("v.json", '{"resolved_ids": ["a"], "unresolved_ids": ["a"]}', "field 'unresolved_ids': 'a' is also in resolved_ids"),
        ("v.json", '{"resolved": ["a"], "no_generation": []}', "lists only the resolved instances"),
        ("v.json", '{"a": 1}', "neither a SWE-bench report nor per-instance details"),
        ("v.json", '{"a": {"resolved": "yes", "cost": 0.7}}', "field 'a.resolved': must be true or false"),
        ("v.json", '{"resolved_ids": [\n"a",]}', "line 2: not JSON"),
        ("v.csv", 'file,outcome\n"' + "a" * 200_000 + '",failed\n', "line 2: not CSV: field larger"),
        ("v.csv", '"' + "a" * 200_000 + '",outcome\n', "line 1: not CSV: field larger"),
    ],
)  # fmt: skip
def test_a_bad_verdicts_file_is_refused_with_its_line_and_column(tmp_path, name, text, says):
    with pytest.raises(InputError) as error:
        load_verdicts(_write(tmp_path, name, text))
    assert says in str(error.value) and str(tmp_path / name) in str(error.value)


def test_the_cli_refuses_a_bad_file_or_names_that_match_no_run_before_reviewing(folder, tmp_path):
    bad = _write(tmp_path, "bad.csv", "file,outcome\na,failed\nb,maybe\n")
    proc = run(["triage", str(folder), "-r", "--outcomes", str(bad)], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "bad.csv, line 3, field 'outcome'" in proc.stderr
    other = _write(tmp_path, "other.csv", "instance_id,resolved\ndjango__django-11001,True\n")
    proc = run(["triage", str(folder), "-r", "--outcomes", str(other)], tmp_path)
    assert proc.returncode == 2 and "no file of the folder is named in it" in proc.stderr, proc.stderr
    assert "django__django-11001" in proc.stderr and "without its extensions" in proc.stderr
    proc = run(["triage", str(folder), "--outcomes", str(tmp_path / "missing.csv")], tmp_path)
    assert proc.returncode == 2 and "no such verdicts file" in proc.stderr
    assert not (tmp_path / "auditor.db").exists()  # nothing was reviewed or stored


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), cut=st.integers(0, 400), noise=st.text(max_size=8))
def test_damaged_verdict_files_load_or_give_one_clear_error(tmp_path, seed, cut, noise):
    """SWE-bench's report damaged anywhere in its tree, and the CSV cut short with text put in:
    a verdicts file loads or is refused with an InputError, never a traceback."""
    rnd = random.Random(seed)
    report = {"resolved_ids": ["a", "b"], "unresolved_ids": ["c"], "error_ids": [], "schema_version": 2}
    text = VERDICTS.read_text(encoding="utf-8")
    for name, content in [
        ("v.json", json.dumps(damaged(report, rnd))),
        ("v.csv", text[:cut] + noise + text[cut:]),
        ("w.csv", text[:cut]),
    ]:
        try:
            load_verdicts(_write(tmp_path, name, content))
        except InputError as error:
            assert name in str(error)


def test_runs_of_one_task_are_resampled_together(tmp_path):
    """With a task column (τ-bench's trials of one task share its difficulty) the AUROC's
    interval resamples tasks, as the outcome benchmark's does; without one, runs."""
    from types import SimpleNamespace

    from auditor.audit.verdicts import agreement
    from scoring.stats.auroc import auroc_interval

    table = [("t1", "failed", 0.9), ("t1", "failed", 0.8), ("t2", "succeeded", 0.1), ("t2", "failed", 0.5)]
    table += [
        ("t3", "succeeded", 0.3),
        ("t3", "succeeded", 0.0),
        ("t4", "failed", 0.2),
        ("t4", "succeeded", 0.4),
    ]
    lines = [f"{task}-trial{i}.json,{task},{outcome}" for i, (task, outcome, _) in enumerate(table)]
    rows = [
        SimpleNamespace(file=f"{t}-trial{i}.json", flagged=s > 0.45, risk_score=s)
        for i, (t, _, s) in enumerate(table)
    ]
    by_task = load_verdicts(_write(tmp_path, "tasks.csv", "file,task_id,outcome\n" + "\n".join(lines) + "\n"))
    by_run = load_verdicts(
        _write(
            tmp_path,
            "runs.csv",
            "file,outcome\n" + "\n".join(ln.replace(f",{ln.split(',')[1]}", "", 1) for ln in lines) + "\n",
        )
    )
    tasks, runs = (
        agreement(by_task, rows, [r.file for r in rows]),
        agreement(by_run, rows, [r.file for r in rows]),
    )
    assert (tasks.resampled, runs.resampled) == ("tasks (task_id)", "runs")
    assert tasks.auroc == runs.auroc and tasks.failed_flagged == runs.failed_flagged
    scores, failed = [s for *_, s in table], [o == "failed" for _, o, _ in table]
    expected = auroc_interval(scores, failed, [t for t, *_ in table], n_resamples=2_000)
    assert expected is not None and tasks.interval == (expected.low, expected.high) != runs.interval


def test_the_agreement_by_group_is_each_group_s_own(judged, folder, tmp_path):
    """--group-by COLUMN: each repository's agreement counts its runs alone, and the groups add
    up to the whole."""
    blind, _ = judged
    resolved = _resolved()
    lines = [f"{name},{name.split('__')[0]},{'True' if ok else 'False'}" for name, ok in resolved.items()]
    verdicts = _write(tmp_path, "by_repo.csv", "instance_id,repo,resolved\n" + "\n".join(lines) + "\n")
    result = _triage(folder, tmp_path / "grouped", "--outcomes", str(verdicts), "--group-by", "repo")
    groups = result["agreement_by_group"]
    risk = {_stem(r["file"]): (r["risk_score"], r["flagged"]) for r in blind["runs"]}
    for repo, agreed in groups.items():
        mine = {n: ok for n, ok in resolved.items() if n.startswith(repo + "__") and n in risk}
        failed = [risk[n] for n, ok in mine.items() if not ok]
        assert (agreed["failed_runs_flagged"] or {"runs": 0})["runs"] == len(failed)
        assert (agreed["failed_runs_flagged"] or {"flagged": 0})["flagged"] == sum(f for _, f in failed)
        assert agreed["verdicts_naming_no_run"] == sorted(
            n for n in resolved if n.startswith(repo + "__") and n not in risk
        )
    total = result["agreement"]["failed_runs_flagged"]["runs"]
    assert sum((a["failed_runs_flagged"] or {"runs": 0})["runs"] for a in groups.values()) == total


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--group-by", "repo"], "--group-by groups the agreement with recorded verdicts: give --outcomes"),
        (["--outcomes", str(VERDICTS), "--group-by", "repo"], "no column 'repo' to group by (columns: instance_id, resolved)"),
    ],
)  # fmt: skip
def test_a_group_column_that_is_not_there_is_refused_before_reviewing(folder, tmp_path, extra, says):
    proc = run(["triage", str(folder), "-r", *extra], tmp_path)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert not (tmp_path / "auditor.db").exists()
