"""The perturbation consequence and free-generation checks, on constructed games and generations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from scoring.action_contexts import FULL, NO_INVALID, perturbation_contexts
from scoring.consequence import (
    ConsequenceRow,
    consequence_rows,
    flip_cells,
    free_generation,
    perturbation_consequence,
)
from scoring.datasets import build_dataset
from scoring.prompts import factor_line
from scoring.runs import SCORE_FIELDS, GeneratedAction, ScoredTarget, run_stream, start_run, target_event
from tests.scoring_support import generate_resumably, model_run_args, scripted_action

LABELS = ["valid", "invalid", "neutral", "valid", "invalid", "neutral", "valid", "neutral"]
WEIGHTS = [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 1.0, 3.0]


def test_contexts_drop_exactly_the_invalid_factors() -> None:
    tasks = build_dataset("agentaudit")[:4]
    assert tasks and all(task.targets for task in tasks)
    for task in tasks:
        for target in task.targets:
            contexts = {c.condition: c for c in perturbation_contexts(task, target)}
            assert contexts[FULL].lines == [factor_line(f.text) for f in task.factors]
            keep = [
                factor_line(task.factors[i].text)
                for i, j in enumerate(target.judgments)
                if j.label != "invalid"
            ]
            if len(keep) < len(task.factors):
                assert contexts[NO_INVALID].lines == keep
            else:
                assert NO_INVALID not in contexts  # nothing to remove: no second context


def scored(task: str, target: str, kind: str, game: np.ndarray, labels: list[str] = LABELS) -> ScoredTarget:
    fields = dict.fromkeys(SCORE_FIELDS, game)
    return ScoredTarget(task, target, kind, "s", labels, np.arange(256), fields)


def gen(task: str, target: str, kind: str, condition: str, value: str, correct: bool, parsed: bool = True):  # type: ignore[no-untyped-def]
    return GeneratedAction(task, target, kind, "s", condition, "{}", parsed, value, correct, None)


def additive(weights: list[float]) -> np.ndarray:
    return np.array([sum(w for i, w in enumerate(weights) if m >> i & 1) for m in range(256)])


def test_shift_is_the_invalid_weight_of_an_additive_game() -> None:
    rows = consequence_rows(
        [gen("t", "slot:x", "slot", FULL, "a", True), gen("t", "slot:x", "slot", NO_INVALID, "b", False)],
        [
            scored("t", "slot:x", "slot", additive(WEIGHTS)),
            scored("u", "tool", "tool", additive(WEIGHTS), ["valid"] * 8),
        ],
    )
    assert len(rows) == 1  # the target without an Invalid factor has no row
    (row,) = rows
    assert row.shift == pytest.approx(abs(WEIGHTS[1] + WEIGHTS[4])) and row.flipped is True
    assert set(row.shares) == {"order-three", "first-order", "leave-one-out"}


def test_median_split_differences_on_hand_made_rows() -> None:
    def row(share: float, shift: float, flipped: bool | None) -> ConsequenceRow:
        return ConsequenceRow(
            "t",
            "s",
            "slot",
            dict.fromkeys(("order-three", "first-order", "leave-one-out"), share),
            shift,
            flipped,
        )

    rows = [
        row(0.9, 4.0, True),
        row(0.8, 2.0, True),
        row(0.1, 1.0, False),
        row(0.2, 0.0, None),
        row(float("nan"), 9.0, True),
    ]
    (first, *_) = perturbation_consequence(rows)
    assert (first.n_high, first.n_low) == (2, 2)  # median of the four finite shares is 0.5
    assert first.shift_high == 3.0 and first.shift_low == 0.5 and first.shift_difference == 2.5
    assert (first.flips_high.successes, first.flips_high.total) == (2, 2)
    assert (first.flips_low.successes, first.flips_low.total) == (0, 1)  # the undecoded row is left out
    assert first.flip_difference == pytest.approx(1.0)


def test_free_generation_ranks_tasks_by_their_slot_invalid_share() -> None:
    rng = np.random.default_rng(5)
    games = {f"t{i}": rng.normal(size=256) * (i + 1) for i in range(6)}
    targets = [scored(t, "slot:x", "slot", g) for t, g in games.items()]
    from scoring.consequence import selector_shares

    share = {t.task_id: selector_shares(t)["order-three"] for t in targets}
    ranked = sorted(share, key=lambda t: -share[t])
    generations = []
    for t in games:
        good = t in ranked[:2]
        generations += [
            gen(t, "tool", "tool", FULL, "send", good, parsed=True),
            gen(t, "slot:x", "slot", FULL, "v", good, parsed=good),
        ]
    top, bottom = free_generation(generations, targets, "agentaudit", examples=2)
    assert (top.group, top.n_tasks, bottom.group, bottom.n_tasks) == ("top", 2, "bottom", 2)
    assert top.tool.successes == 2 and top.slot.successes == 2 and top.parsed.successes == 2
    assert bottom.tool.successes == 0 and bottom.slot is None  # no parsed slot target: no rate


def test_flip_cells_count_changed_values() -> None:
    rows = [
        gen("a", "tool", "tool", FULL, "x", True), gen("a", "tool", "tool", NO_INVALID, "y", False),
        gen("b", "slot:s", "slot", FULL, "x", True), gen("b", "slot:s", "slot", NO_INVALID, "x", True),
        gen("c", "slot:s", "slot", FULL, "x", True),
    ]  # fmt: skip
    cells = dict(flip_cells(rows))
    assert (cells["all"].successes, cells["all"].total) == (1, 2)
    assert (cells["tool"].successes, cells["slot"].successes) == (1, 0)


def fake_decode(task, lines):  # type: ignore[no-untyped-def]
    """Wrong in the full context, right once anything is removed."""
    return scripted_action(task, len(lines) < len(task.factors))


def test_run_report_with_a_coalition_run(
    sqlite_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    tasks = build_dataset("agentaudit")[:2]
    generate_resumably(sqlite_store, "p1", "perturbation", tasks, fake_decode)
    start_run(sqlite_store, "c1", {"dataset": "agentaudit", "model": "fake", "experiment": "coalition"})
    game = dict.fromkeys(SCORE_FIELDS, additive(WEIGHTS))
    for task in tasks:
        events = [target_event("c1", task, i, np.arange(256), game, 2) for i in range(3)]
        sqlite_store.append(run_stream("c1"), events)
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    args = ["score", "report", "p1", "--out", str(tmp_path), "--json"]
    alone = CliRunner().invoke(app, args)
    assert alone.exit_code == 0, alone.output
    assert set(json.loads(alone.output)["tables"]) == {"perturbation_flips"}
    result = CliRunner().invoke(app, [*args, "--coalition-run", "c1"])
    assert result.exit_code == 0, result.output
    tables = json.loads(result.output)["tables"]
    with_invalid = sum("invalid" in t.labels() for task in tasks for t in task.targets if t.kind == "tool")
    flips = next(r for r in tables["perturbation_flips"] if r["cell"] == "all")
    assert flips["flipped"].startswith(f"{with_invalid}/{with_invalid}")  # every removal changes the value
    assert [r["selector"] for r in tables["perturbation_consequence"]] == [
        "order-three",
        "first-order",
        "leave-one-out",
    ]
    assert [r["group"] for r in tables["free_generation"]] == ["top", "bottom"]
    assert (tmp_path / "p1-perturbation_consequence.csv").exists()


@pytest.mark.model
@pytest.mark.slow
def test_perturbation_run_on_smollm2(score_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = score_cli(model_run_args("perturbation", "pert"))
    assert result.exit_code == 0, result.output
    from scoring.runs import read_generations

    _, rows = read_generations(score_cli.store, "pert")
    task = build_dataset("agentaudit")[0]
    tool = next(t for t in task.targets if t.target_id == "tool")
    assert [r.condition for r in rows] == [c.condition for c in perturbation_contexts(task, tool)]
    report = score_cli(["score", "report", "pert", "--json", "--out", str(tmp_path)])
    assert report.exit_code == 0, report.output
