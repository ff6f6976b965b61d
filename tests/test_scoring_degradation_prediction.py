"""§4.4 predictors of degradation outcomes from coalition scores, on games whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from scoring.datasets import build_dataset
from scoring.degradation_prediction import (
    PredictionRow,
    aligned_share,
    auroc,
    predict_degradation,
    prediction_rows,
)
from scoring.degradation_stats import degradation_rows
from scoring.runs import SCORE_FIELDS, read_generations, read_run, run_stream, start_run, target_event
from scoring.transforms import shapley_interaction
from tests.scoring_support import generate_resumably, scripted_action


def test_aligned_share_of_a_pair_game() -> None:
    game = np.zeros(8)  # three factors; one Harsanyi dividend m({0, 1}) = 2
    game[0b011] = game[0b111] = 2.0
    interactions = shapley_interaction(game)
    assert interactions[0b011] == pytest.approx(2.0) and interactions[0b001] == pytest.approx(1.0)
    assert aligned_share(interactions, 0, invalid=0b010) == pytest.approx(2 / 3)  # {0,1} of {0}, {0,1}
    assert aligned_share(interactions, 0, invalid=0b100) == 0.0  # factor 2 shares no term with 0
    assert aligned_share(np.zeros(8), 0, invalid=0b010) == 0.0  # no mass at all: no share


def test_auroc_matches_hand_values_and_sklearn() -> None:
    assert auroc(np.array([1.0, 2, 3, 4]), np.array([0, 0, 1, 1])) == 1.0
    assert auroc(np.array([1.0, 1, 1, 1]), np.array([0, 1, 0, 1])) == 0.5
    assert auroc(np.array([4.0, 3, 2, 1]), np.array([0, 0, 1, 1])) == 0.0
    assert np.isnan(auroc(np.array([1.0, 2]), np.array([1, 1])))
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    scores, y = rng.integers(0, 5, 200).astype(float), rng.integers(0, 2, 200)
    assert auroc(scores, y) == pytest.approx(sklearn.roc_auc_score(y, scores))


def rows_where_effect_decides(n_tasks: int = 20) -> list[PredictionRow]:
    """Large effects change the action, small ones do not; the share is noise; harm marks (1,0,1)."""
    rng = np.random.default_rng(0)
    out = []
    for t in range(n_tasks):
        for k in range(3):
            effect = float(rng.uniform(0, 4))
            harm = float(rng.uniform(-1, 1))
            out.append(
                PredictionRow(
                    f"task{t}",
                    f"task{t}/{k}",
                    "slot",
                    effect > 2,
                    harm > 0.6,
                    float(rng.uniform()),
                    effect,
                    harm,
                )
            )
    return out


def test_predictors_on_rows_with_a_known_answer() -> None:
    pytest.importorskip("sklearn")
    p = predict_degradation(rows_where_effect_decides(), resamples=300)
    by = {(d.predictor, d.endpoint): d for d in p.single}
    effect = by["absolute score effect", "changed"]
    assert effect.auroc.estimate == 1.0 and effect.n_rows == 60 and effect.n_tasks == 20
    assert effect.top_decile.successes == 6 and effect.bottom_decile.successes == 0
    assert effect.decile_gap == pytest.approx(1.0)
    assert 0.2 < by["aligned Shapley share", "changed"].auroc.estimate < 0.8  # noise
    assert by["signed score harm", "retained_invalid"].auroc.estimate == 1.0
    assert p.effect_model.estimate > 0.95  # the held-out model recovers the threshold
    assert p.increment.low <= 1e-9 and p.increment.high >= -0.05  # noise adds nothing


def test_too_few_tasks_give_no_held_out_model() -> None:
    p = predict_degradation(rows_where_effect_decides(n_tasks=3), resamples=100)
    assert p.effect_model is None and p.combined_model is None and p.increment is None
    assert p.single[0].auroc is not None  # single predictors still have their AUROCs


def fake_decode(task, lines):  # type: ignore[no-untyped-def]
    """Correct exactly when every factor is present or some Invalid factor is absent."""
    n = len(task.factors)
    return scripted_action(task, len(lines) == n or len(lines) < n - 1)


def additive_game(weights: list[float]) -> np.ndarray:
    return np.array([sum(w for i, w in enumerate(weights) if m >> i & 1) for m in range(256)])


def test_join_with_a_coalition_run_and_report(
    sqlite_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    tasks = build_dataset("agentaudit")[:2]
    generate_resumably(sqlite_store, "d7", "degradation", tasks, fake_decode)
    start_run(sqlite_store, "c7", {"dataset": "agentaudit", "model": "fake", "experiment": "coalition"})
    weights = [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 1.0, 3.0]
    game = additive_game(weights)
    for task in tasks:
        events = [
            target_event("c7", task, i, np.arange(256), dict.fromkeys(SCORE_FIELDS, game), 3)
            for i in range(len(task.targets))
        ]
        sqlite_store.append(run_stream("c7"), events)

    _, generations = read_generations(sqlite_store, "d7")
    _, scored = read_run(sqlite_store, "c7")
    joined = prediction_rows(degradation_rows(generations), scored, {t.task_id: t for t in tasks})
    assert joined
    for row in joined:
        task = next(t for t in tasks if row.target_key.startswith(t.task_id + "/"))
        target = next(tg for tg in task.targets if row.target_key == task.target_key(tg))
        invalid = [i for i, label in enumerate(target.labels()) if label == "invalid"]
        assert row.abs_effect == pytest.approx(abs(sum(weights[i] for i in invalid)))  # additive: Σ w_I
        assert row.signed_harm == pytest.approx(-sum(weights[i] for i in invalid))
        assert row.aligned_share == 0.0  # an additive game has no interaction terms
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    args = ["score", "report", "d7", "--out", str(tmp_path), "--resamples", "200", "--json"]
    result = CliRunner().invoke(app, [*args, "--coalition-run", "c7"])
    assert result.exit_code == 0, result.output
    tables = json.loads(result.output)["tables"]
    assert [r["predictor"] for r in tables["degradation_predictors"]] == [
        "aligned Shapley share",
        "absolute score effect",
        "signed score harm",
    ]
    assert tables["degradation_predictors"][0]["rows"] == str(len(joined))
    assert [r["model"] for r in tables["degradation_held_out"]][-1] == "increment"
    assert (tmp_path / "d7-degradation_predictors.csv").exists()
