"""The run report: top-K choices and sweep, the invalid-mass split, signed shares and baselines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from scoring.coalition import SHARE_FIELDS, baseline_shares, target_shares
from scoring.datasets import build_dataset
from scoring.report import BASELINE_K, summarise_run
from scoring.runs import SCORE_FIELDS, ScoredTarget, start_run, target_event
from scoring.transforms import ESTIMANDS

N = 8


def positive_game(rng: np.random.Generator, labels: list[str]) -> np.ndarray:
    """Non-negative dividends on all sets of order ≤ 3, strongest where an Invalid factor is."""
    inv = [i for i, lab in enumerate(labels) if lab == "invalid"]
    div = np.zeros(1 << N)
    for mask in range(1, 1 << N):
        if mask.bit_count() <= 3:
            div[mask] = abs(rng.normal()) * (3.0 if any(mask >> i & 1 for i in inv) else 1.0)
    return np.array([div[[b for b in range(1 << N) if s & b == b]].sum() for s in range(1 << N)])


@pytest.fixture(scope="module")
def scored() -> list[ScoredTarget]:
    rng = np.random.default_rng(3)
    out = []
    for t, task in enumerate(build_dataset("agentaudit")[:3]):
        for target in task.targets:
            labels = target.labels()
            game = positive_game(rng, labels)
            out.append(
                ScoredTarget(
                    task.task_id,
                    target.target_id,
                    target.kind.value,
                    task.setting,
                    labels,
                    np.arange(1 << N),
                    {f: game + t for f in SCORE_FIELDS},
                )
            )
    return out


def test_sweep_split_signed_and_baselines(scored: list[ScoredTarget]) -> None:
    ks = (20, 50, 80, None)
    summary = summarise_run(scored, ks=ks, fields=SHARE_FIELDS, n_perm=50, n_resamples=200)
    keys = {(r.method, r.top_k) for r in summary.rows}
    assert keys == {(e, k) for e in ESTIMANDS for k in ("20", "50", "80", "all")} | {
        ("leave_one_out", BASELINE_K),
        ("first_order", BASELINE_K),
    }
    obs = {(r.method, r.top_k, r.cell.cell, r.cell.field): r.cell.observed for r in summary.rows}
    with_invalid = [s for s in scored if "invalid" in s.labels]
    for (method, k, cell, field), value in obs.items():
        if field == "s_any":  # the three parts of the invalid mass add up to all of it
            parts = sum(
                obs[(method, k, cell, f)] for f in ("invalid_only", "invalid_valid", "invalid_neutral")
            )
            assert parts == pytest.approx(value)
            # all mass is positive here: the positive-mass share is the fractional share
            assert obs[(method, k, cell, "s_frac_pos")] == pytest.approx(obs[(method, k, cell, "s_frac")])
    assert not any(f == "s_frac_neg" for *_, f in obs)  # no negative mass: undefined, never zero
    for k in ks:  # each K is applied: the cell mean of the per-target shares at that K
        direct = [
            target_shares(s.game(), s.labels, target_key=s.key, estimand="harsanyi", k=k, n_perm=1)
            for s in with_invalid
        ]
        assert obs[("harsanyi", "all" if k is None else str(k), "all", "s_frac")] == pytest.approx(
            np.mean([d.observed["s_frac"] for d in direct])
        )
    assert obs[("harsanyi", "20", "all", "s_any")] != pytest.approx(obs[("harsanyi", "all", "all", "s_any")])
    loo = [
        baseline_shares(s.game(), s.labels, target_key=s.key, n_perm=1)["leave_one_out"] for s in with_invalid
    ]
    assert obs[("leave_one_out", BASELINE_K, "all", "s_frac")] == pytest.approx(
        np.mean([b.observed["s_frac"] for b in loo])
    )


def test_report_cli_options(sqlite_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    tasks = build_dataset("agentaudit")[:2]
    rng = np.random.default_rng(5)
    start_run(sqlite_store, "r1", {"dataset": "agentaudit", "model": "synthetic", "experiment": "coalition"})
    events = [
        target_event("r1", task, i, np.arange(1 << N), {f: rng.normal(size=1 << N) for f in SCORE_FIELDS}, 4)
        for task in tasks
        for i in range(3)
    ]
    sqlite_store.append("score-run-r1", events)
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    runner = CliRunner()
    args = ["score", "report", "r1", "--out", str(tmp_path), "--resamples", "200"]

    result = runner.invoke(app, [*args, "--top-k", "sweep", "--shares", "split", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    assert {r["top-K"] for r in rows} == {"20", "50", "80", "all", BASELINE_K}
    assert {r["share"] for r in rows} == {"invalid_only", "invalid_valid", "invalid_neutral"}
    assert (tmp_path / "r1.png").stat().st_size > 1000

    result = runner.invoke(app, [*args, "--top-k", "all", "--shares", "signed"])
    assert result.exit_code == 0, result.output
    assert "top-all, order ≤ 3" in result.output and "every first-order term" in result.output
    csv_rows = (tmp_path / "r1.csv").read_text().splitlines()
    assert csv_rows[0].startswith("method,top-K,cell,share")
    assert {line.split(",")[3] for line in csv_rows[1:]} == {"s_frac_pos", "s_frac_neg"}

    for bad in (["--top-k", "30"], ["--shares", "everything"]):
        result = runner.invoke(app, [*args, *bad])
        assert result.exit_code != 0
        assert "unknown" in str(result.exception) + result.output
