"""Valid-evidence degradation without a model: contexts, hand-counted statistics, resume, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from schemas.attribution import AttributionLabel, AttributionTask
from scoring.action_contexts import degradation_contexts
from scoring.datasets import build_dataset
from scoring.degradation_stats import summarise_degradation
from scoring.prompts import factor_line
from scoring.runs import (
    GeneratedAction,
)
from tests.scoring_support import generate_resumably, scripted_action


@pytest.fixture(scope="module")
def tasks() -> list[AttributionTask]:
    return build_dataset("agentaudit")[:2]


def test_contexts_hold_exactly_their_factors(tasks: list[AttributionTask]) -> None:
    assert tasks and all(task.targets for task in tasks)
    assert any("valid" in target.labels() for task in tasks for target in task.targets)
    for task in tasks:
        for target in task.targets:
            labels = target.labels()
            ids = [f.factor_id for f in task.factors]
            ctx = {c.condition: c.lines for c in degradation_contexts(task, target)}
            valid = [fid for fid, lab in zip(ids, labels, strict=True) if lab == "valid"]
            assert list(ctx) == ["full", *(f"{arm}:{x}" for x in valid for arm in ("mixed", "clean"))]
            line = {fid: factor_line(f.text) for fid, f in zip(ids, task.factors, strict=True)}
            assert ctx["full"] == [line[i] for i in ids]
            for x in valid:
                assert ctx[f"mixed:{x}"] == [line[i] for i in ids if i != x]
                keep = [i for i, lab in zip(ids, labels, strict=True) if i != x and lab != "invalid"]
                assert ctx[f"clean:{x}"] == [line[i] for i in keep]


def gen(target: str, kind: str, condition: str, correct: bool, value: str | None = None) -> GeneratedAction:
    value = value if value is not None else ("ref" if correct else "other")
    return GeneratedAction("t", target, kind, "s", condition, "", True, value, correct, None)


def outcomes(target: str, kind: str, factor: str, f: bool, m: bool, c: bool) -> list[GeneratedAction]:
    return [
        gen(target, kind, "full", f),
        gen(target, kind, f"mixed:{factor}", m),
        gen(target, kind, f"clean:{factor}", c),
    ]


def test_stats_match_hand_counts() -> None:
    rows = [
        # target a (tool) has two Valid factors: the full generation is shared between their rows.
        *outcomes("a", "tool", "f0", True, False, True),  # retained-invalid; discordant; clean-only
        *outcomes("a", "tool", "f1", True, True, True)[1:],
        *outcomes("b", "slot", "f2", False, False, True),  # discordant, clean-only correct, not (1,0,1)
        *outcomes("c", "slot", "f3", True, True, False),  # discordant, mixed-only correct
        gen("d", "slot", "full", True),  # no mixed/clean pair: no row
        gen("e", "slot", "mixed:f4", False),  # no full, no clean: no row
        gen("e", "slot", "clean:f4", True),
        *outcomes("g", "slot", "f5", True, False, False),  # wrong both, same value: concordant
    ]
    s = summarise_degradation(rows)
    assert s.n_generations == len(rows) and s.n_rows == 5
    cells = {c.cell: c for c in s.cells}
    a = cells["all"]
    assert (a.n_rows, a.n_targets) == (5, 4)
    assert (a.c_full.successes, a.c_full.total) == (4, 5)
    assert (a.c_mixed.successes, a.c_clean.successes) == (2, 3)
    assert a.discordant.successes == 3
    assert (a.mcnemar.b, a.mcnemar.c, a.mcnemar.n_pairs) == (1, 2, 5)
    assert a.mcnemar.p_value == pytest.approx(1.0)
    assert a.retained_invalid.successes == 1 and a.retained_invalid.total == 5
    assert 0 < a.retained_invalid.low < 0.2 < a.retained_invalid.high < 1
    assert (cells["tool"].n_rows, cells["tool"].retained_invalid.successes) == (2, 1)
    assert (cells["slot"].n_rows, cells["slot"].retained_invalid.successes) == (3, 0)
    assert [(r.full.target_key, r.factor_id) for r in s.retained] == [("t/a", "f0")]


def test_empty_cells_have_no_rates() -> None:
    s = summarise_degradation([gen("a", "tool", "full", True)])
    assert s.n_rows == 0
    for c in s.cells:
        assert c.c_full is None and c.discordant is None and c.mcnemar is None and c.retained_invalid is None


def fake_decode(task: AttributionTask, lines: list[str]) -> str:
    """Correct exactly when every factor is present or some Invalid factor is absent."""
    n = len(task.factors)
    return scripted_action(task, len(lines) == n or len(lines) < n - 1)


def test_run_resumes_and_reports(
    sqlite_store, tasks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    generate_resumably(sqlite_store, "d1", "degradation", tasks, fake_decode)

    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    result = CliRunner().invoke(app, ["score", "report", "d1", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["tables"]) == {"degradation", "retained_invalid"}
    cell = next(r for r in data["tables"]["degradation"] if r["cell"] == "all")
    labels = [[j.label for j in t.targets[0].judgments] for t in tasks]
    n_rows = sum(lab.count(AttributionLabel.valid) for lab in labels)
    # mixed drops one factor (wrong); clean drops more (correct) only where an Invalid factor exists
    retained = sum(lab.count(AttributionLabel.valid) for lab in labels if AttributionLabel.invalid in lab)
    assert data["n_rows"] == n_rows
    assert cell["rows"] == str(n_rows) and cell["retained-invalid (1,0,1)"].startswith(f"{retained}/{n_rows}")
    assert cell["c_F"].startswith(f"{n_rows}/{n_rows}") and cell["c_M"].startswith(f"0/{n_rows}")
    assert len(data["tables"]["retained_invalid"]) == retained
    assert (tmp_path / "d1-degradation.csv").read_text().startswith("cell,rows,")
    text = CliRunner().invoke(app, ["score", "report", "d1", "--out", str(tmp_path)], env={"COLUMNS": "250"})
    assert text.exit_code == 0 and "valid-evidence degradation" in text.output
