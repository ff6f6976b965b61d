"""benchmarks/coding_signals.py: every candidate signal is measured on both parts of the split, from
real mini-SWE-agent runs, and a folder without outcomes is one clear line."""

from __future__ import annotations

import json

import pytest

from benchmarks.coding_signals import SIGNALS, main, measure, table
from tests.conftest import REPO

RUNS = REPO / "tests" / "fixtures" / "real" / "mini-swe-agent"
PICKED = {  # real runs, given made-up verdicts: the script's mechanics, not the data's figures
    "sympy__sympy-13852.traj.json": ("sympy", "False"),
    "sympy__sympy-19346.traj.json": ("sympy", "True"),
    "astropy__astropy-7606.traj.json": ("astropy", "False"),
    "astropy__astropy-7671.traj.json": ("astropy", "True"),
}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "runs").mkdir()
    for name in PICKED:
        (tmp_path / "runs" / name).write_bytes((RUNS / name).read_bytes())
    rows = "".join(
        f"{n},{'failed' if r == 'False' else 'succeeded'},{r},{g}\n" for n, (g, r) in PICKED.items()
    )
    (tmp_path / "outcomes.csv").write_text("file,outcome,resolved,repo\n" + rows)
    return tmp_path


def test_every_signal_is_read_from_each_run_and_scored_on_both_parts(folder) -> None:
    rows = measure(folder)
    assert {r["file"] for r in rows} == set(PICKED) and all(set(r["signals"]) == set(SIGNALS) for r in rows)
    by = {r["file"]: r for r in rows}
    assert (
        by["sympy__sympy-13852.traj.json"]["unresolved"]
        and not by["sympy__sympy-19346.traj.json"]["unresolved"]
    )
    assert all(r["signals"]["steps"] > r["signals"]["commands"] > 0 for r in rows)
    caught = by["astropy__astropy-7606.traj.json"]["signals"]  # its script printed the request's TypeError
    assert caught["never reproduced (failed or printed the request's error)"] == 0.0
    assert caught["never shown fixed"] == 0.0
    scores = table(rows, frozenset({"astropy"}))
    assert set(scores) == set(SIGNALS)
    assert all(0.0 <= v <= 1.0 for parts in scores.values() for v in parts.values())


def test_the_json_names_the_parts_and_a_folder_without_outcomes_is_refused(folder, tmp_path, capsys) -> None:
    assert main([str(folder), "--held-out", "astropy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == 4 and out["held_out"] == ["astropy"]
    assert set(out["auroc"]["steps"]) == {"development", "held out", "all"}
    with pytest.raises(SystemExit):
        main([str(tmp_path / "runs")])
    assert "no outcomes.csv" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(folder), "--held-out", "django"])
    assert "names no repository" in capsys.readouterr().err
