"""Score-elicitation variants: rewritten questions, agreement on known games, the real model end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.datasets import build_dataset
from scoring.elicitation import VARIANTS, elicitation_agreement, elicited_target, elicited_tasks
from scoring.prompts import prompt_parts
from scoring.runs import ScoredTarget


def test_variants_change_only_the_question_and_the_forced_continuation() -> None:
    tasks = build_dataset("agentaudit")[:6]
    letters = set()
    for variant in VARIANTS:
        for task, asked in zip(tasks, elicited_tasks(variant, tasks), strict=True):
            assert prompt_parts(asked).factors == prompt_parts(task).factors
            assert prompt_parts(asked).scaffold == prompt_parts(task).scaffold
            for old, new in zip(task.targets, asked.targets, strict=True):
                assert new.judgments == old.judgments and new.value == old.value
                assert new.question.startswith(old.question) and repr(old.value) in new.question
                assert new.target_string.startswith(" ")
                if variant == "elicit-choice":
                    letters.add(new.target_string)
                    right = "(A)" if new.target_string == " A" else "(B)"
                    assert f"{right} {old.value!r}" in new.question
                    assert repr(old.competing_value) in new.question
    assert elicited_target(tasks[0], tasks[0].targets[0], "elicit-yesno").target_string == " yes"
    assert elicited_target(tasks[0], tasks[0].targets[0], "elicit-rating").target_string == " 5"
    assert letters == {" A", " B"}  # the reference's letter alternates across targets


def scored(key: str, kind: str, game: np.ndarray, labels: list[str]) -> ScoredTarget:
    task, target = key.split("/")
    fields = {"sum_logodds": game, "mean_logodds": game, "sum_logprob": game}
    return ScoredTarget(task, target, kind, "s", labels, np.arange(game.size), fields)


def random_games(seed: int, n: int = 8) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=256) for _ in range(n)]


LABELS = ["valid", "invalid", "neutral", "valid", "invalid", "neutral", "valid", "neutral"]


def test_a_rescaled_game_agrees_perfectly_and_noise_does_not() -> None:
    games = random_games(1)
    direct = [scored(f"t{i}/slot:x", "slot", g, LABELS) for i, g in enumerate(games)]
    scaled = [scored(f"t{i}/slot:x", "slot", 3.0 * g, LABELS) for i, g in enumerate(games)]
    rows = {(r.cell, r.share): r for r in elicitation_agreement(direct, scaled)}
    assert rows["all", "s_frac"].n_targets == 8
    assert rows["all", "s_frac"].pearson == pytest.approx(1.0)
    assert rows["slot", "s_frac"].spearman == pytest.approx(1.0)
    assert rows["tool", "s_frac"].n_targets == 0 and rows["tool", "s_frac"].pearson is None
    noise = [scored(f"t{i}/slot:x", "slot", g, LABELS) for i, g in enumerate(random_games(2))]
    assert abs(elicitation_agreement(direct, noise)[0].pearson) < 0.9
    without = [scored("t0/slot:x", "slot", games[0], ["valid"] * 8)]
    assert elicitation_agreement(without, without)[0].n_targets == 0  # no invalid share defined


@pytest.mark.model
@pytest.mark.slow
def test_choice_run_end_to_end_on_smollm2(score_cli) -> None:  # type: ignore[no-untyped-def]
    from scoring.runs import SCORE_FIELDS, run_stream, start_run, target_event

    task = build_dataset("agentaudit")[0]
    start_run(
        score_cli.store, "direct", {"dataset": "agentaudit", "model": "smollm2", "experiment": "coalition"}
    )
    game = dict.fromkeys(
        SCORE_FIELDS, np.arange(256, dtype=float)
    )  # a stored direct run, no second model run
    index = next(i for i, t in enumerate(task.targets) if t.target_id == "tool")
    score_cli.store.append(
        run_stream("direct"), [target_event("direct", task, index, np.arange(256), game, 2)]
    )
    base = ["score", "run", "--dataset", "agentaudit", "--limit", "1", "--target-kind", "tool"]
    run = score_cli([*base, "--experiment", "elicit-choice", "--run-id", "choice"])
    assert run.exit_code == 0, run.output
    report = score_cli(["score", "report", "choice", "--direct-run", "direct", "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    first = data["agreement"][0]
    assert data["run"]["experiment"] == "elicit-choice" and first["cell"] == "all"
    tool = next(t for t in task.targets if t.target_id == "tool")
    assert first["n_targets"] == int("invalid" in tool.labels())  # one tool target: too few for a correlation
    assert first["pearson"] is None
    listed = json.loads(score_cli(["score", "runs", "--json"]).output)
    cost = {r["run_id"]: r for r in listed}
    assert cost["choice"]["requests"] == 256 and cost["choice"]["devices"] == ["cpu"]
    assert cost["choice"]["seconds"] > 0
    wrong = score_cli(["score", "report", "direct", "--direct-run", "choice"])
    assert wrong.exit_code != 0 and "not an elicitation run" in str(wrong.exception) + wrong.output
