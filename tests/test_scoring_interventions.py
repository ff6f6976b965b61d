"""Matched source interventions without a model: effects on hand-made scores, the prompt masks,
resumable runs and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.core.errors import ContractError
from auditor.surfaces.cli.main import app
from scoring.action_contexts import action_contexts
from scoring.datasets import build_dataset
from scoring.interventions import (
    CONTEXTS,
    CONTROL,
    COPRESENT,
    SUPPORT,
    co_present,
    matched_effects,
    matched_parts,
    same_proposition,
    support_arm,
)
from scoring.matched_report import summarise_matched
from scoring.prompts import query_text, scaffold_text
from scoring.runs import MatchedTarget, read_matched, run_matched, run_stream, start_run

HAND = {"base": 1.0, "T_S": 3.0, "U_S": 1.5, "T_C": -2.0, "U_C": 0.0}


def test_effects_on_hand_made_scores() -> None:
    e = matched_effects(HAND)
    assert (e.G_T, e.G_U, e.D_T, e.D_U) == (2.0, 0.5, 3.0, 1.0)
    assert (e.delta_S, e.delta_C, e.delta_delta) == (1.5, 2.0, 0.5)


def test_effects_need_every_context() -> None:
    with pytest.raises(ContractError, match="U_C"):
        matched_effects({k: v for k, v in HAND.items() if k != "U_C"})


def test_same_proposition_on_hand_made_scores() -> None:
    c = same_proposition({**HAND, "flip_U": 0.5, "flip_T": -1.0})
    assert c is not None and (c.R_U, c.R_T, c.gap) == (0.5, 2.0, 1.5)
    assert same_proposition(HAND) is None  # no Invalid factor: no control, not a zero


def test_support_arm_on_hand_made_scores() -> None:
    arm = support_arm({**HAND, "drop": -2.0, "drop_U": -1.5})
    assert (arm.trusted, arm.untrusted, arm.gap) == (3.0, 0.5, 2.5)


def test_co_present_on_hand_made_scores() -> None:
    c = co_present({**HAND, "dup_T": 2.5, "dup_U": 1.25})
    assert c is not None and (c.dup_T, c.dup_U, c.gap) == (1.5, 0.25, 1.25)
    assert c.delta_delta == 2.0 - 1.25  # competition gap D_T − D_U = 3 − 1
    assert co_present(HAND) is None  # scored before the check existed: not a zero


def test_co_present_duplicates_a_valid_factor_on_the_full_base() -> None:
    task = build_dataset("agentaudit")[0]
    assert task.targets
    for target in task.targets:
        parts, masks = matched_parts(task, target)
        base = parts.prompt(masks["base"], 0)
        first = next(i for i, j in enumerate(target.judgments) if j.label == "valid")
        for name, frame in zip(COPRESENT, ("trusted current record", "untrusted external note"), strict=True):
            prompt = parts.prompt(masks[name], 0)
            line = f"- Source status: {frame}. Proposition: {task.factors[first].text}\n"
            assert prompt == base.replace(query_text(target), line + query_text(target))


def test_masks_select_the_shared_prompts() -> None:
    seen = set()
    for task in build_dataset("agentaudit")[:5]:
        for target in task.targets:
            parts, masks = matched_parts(task, target)
            assert list(masks)[: len(CONTEXTS)] == list(CONTEXTS)
            for context in action_contexts(task, target):
                if context.condition in masks:
                    want = scaffold_text(task) + "".join(context.lines) + query_text(target)
                    assert parts.prompt(masks[context.condition], 0) == want
            seen |= set(masks)
    assert {*CONTROL, *SUPPORT} <= seen  # the in-place competitor is covered, not only appended lines


def _row(task: str, kind: str, v: dict[str, float]) -> MatchedTarget:
    return MatchedTarget(task, kind, kind, "s", {c: {"sum_logodds": x} for c, x in v.items()})


def test_summary_means_and_intervals() -> None:
    other = {"base": 0.0, "T_S": 1.0, "U_S": 0.0, "T_C": -1.0, "U_C": -1.0}  # δ_S 1, δ_C 0, ΔΔ −1
    cells = {
        c.cell: c
        for c in summarise_matched([_row("a", "tool", HAND), _row("b", "slot", other)], n_resamples=200)
    }
    assert cells["all"].n_targets == 2 and cells["all"].n_tasks == 2
    assert cells["all"].means["delta_S"] == 1.25 and cells["all"].means["delta_delta"] == -0.25
    interval = cells["all"].intervals["delta_C"]
    assert interval is not None and interval.low == 0.0 and interval.high == 2.0
    assert cells["tool"].intervals["delta_C"] is None  # one task: no interval, the mean stays
    assert cells["tool"].means["delta_C"] == 2.0


def test_run_resumes_and_reports(sqlite_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    tasks = build_dataset("agentaudit")[:3]
    calls = []

    def score(task, target):  # type: ignore[no-untyped-def]
        calls.append(task.target_key(target))
        shift = len(calls) / 10
        v = (
            HAND
            | {"drop": -2.0, "drop_U": -1.5}
            | ({"flip_U": 0.5, "flip_T": -1.0} if len(calls) == 2 else {})
        )
        return {c: {"sum_logodds": x + shift, "mean_logodds": x, "sum_logprob": -x} for c, x in v.items()}, 2

    start_run(sqlite_store, "m", {"dataset": "agentaudit", "model": "fake", "experiment": "matched"})
    assert run_matched(sqlite_store, "m", tasks, score, kinds={"tool"}) == (3, 0)
    version = sqlite_store.stream_version(run_stream("m"))
    assert run_matched(sqlite_store, "m", tasks, score, kinds={"tool"}) == (0, 3)
    assert sqlite_store.stream_version(run_stream("m")) == version and len(calls) == 3
    _, rows = read_matched(sqlite_store, "m")
    assert [r.kind for r in rows] == ["tool"] * 3 and rows[0].field()["T_S"] == 3.1

    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    out = CliRunner().invoke(
        app, ["score", "report", "m", "--out", str(tmp_path), "--resamples", "200", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    rows_by_cell = {r["cell"]: r for r in data["tables"]["matched"]}
    assert rows_by_cell["tool"]["targets"] == "3" and rows_by_cell["tool"]["δ_S"].startswith("+1.500 [")
    assert rows_by_cell["slot"]["targets"] == "0" and rows_by_cell["slot"]["δ_S"] == "n/a"
    control = {r["cell"]: r for r in data["tables"]["same_proposition"]}
    assert control["tool"]["targets"] == "1" and control["tool"]["R_T − R_U"] == "+1.500"  # one task: no CI
    support = {r["cell"]: r for r in data["tables"]["support_arm"]}
    assert support["all"]["targets"] == "3" and support["all"]["trusted − untrusted"].startswith("+2.500 [")
    assert data["tables"]["co_present"][0]["targets"] == "0"  # scored without the duplicates
    assert {p.name for p in tmp_path.glob("*.csv")} == {f"m-{t}.csv" for t in data["tables"]}
    text = CliRunner().invoke(app, ["score", "report", "m", "--out", str(tmp_path), "--resamples", "200"])
    assert text.exit_code == 0 and "denominator" in text.output


def test_an_added_instruction_reaches_every_matched_prompt() -> None:
    from scoring.prompts import AUTHORITY_POLICY, INSTRUCTIONS, with_instruction

    task = build_dataset("agentaudit")[0]
    plain, _ = matched_parts(task, task.targets[0])
    for name in ("policy", "brief"):
        parts, masks = matched_parts(with_instruction(task, INSTRUCTIONS[name]), task.targets[0])
        assert INSTRUCTIONS[name] in parts.scaffold and parts.factors == plain.factors
        assert all(INSTRUCTIONS[name] in parts.prompt(m, 0) for m in masks.values())
    assert INSTRUCTIONS["policy"] == AUTHORITY_POLICY and INSTRUCTIONS["none"] is None


def test_unknown_instruction_is_one_line() -> None:
    result = CliRunner().invoke(
        app, ["score", "run", "--dataset", "agentaudit", "--experiment", "matched", "--instruction", "strict"]
    )
    assert result.exit_code != 0
    assert "unknown instruction 'strict'" in str(result.exception) + result.output
