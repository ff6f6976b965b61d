"""The guardrail without a model: instruction variants, hand-counted statistics, resume, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from schemas.attribution import AttributionTask
from scoring.action_contexts import factorial_contexts, guardrail_contexts
from scoring.datasets import build_dataset
from scoring.guardrail_stats import summarise_guardrail
from scoring.prompts import AUTHORITY_POLICY, action_text, action_turns, with_instruction
from scoring.runs import GeneratedAction
from tests.scoring_support import generate_resumably, scripted_action


@pytest.fixture(scope="module")
def tasks() -> list[AttributionTask]:
    return build_dataset("agentaudit")[:2]


def test_policy_variant_differs_only_by_the_instruction(tasks: list[AttributionTask]) -> None:
    task, target = tasks[0], tasks[0].targets[1]
    ctx = {c.condition: c for c in guardrail_contexts(task, target)}
    cells = ("base", "T_C", "U_C")
    assert list(ctx) == [f"{v}:{c}" for v in ("plain", "policy") for c in cells]
    factorial = {c.condition: c for c in factorial_contexts(task, target)}
    for cell in cells:
        plain, policy = ctx[f"plain:{cell}"], ctx[f"policy:{cell}"]
        assert plain.lines == policy.lines == factorial[cell].lines
        assert plain.competitor == policy.competitor == factorial[cell].competitor
        assert plain.instruction is None and policy.instruction == AUTHORITY_POLICY
        system, user = action_turns(with_instruction(task, plain.instruction), plain.lines)
        p_system, p_user = action_turns(with_instruction(task, policy.instruction), policy.lines)
        assert AUTHORITY_POLICY not in system and p_user == user
        assert p_system == system.replace(
            task.interface.system_instruction, f"{task.interface.system_instruction}\n\n{AUTHORITY_POLICY}"
        )
        raw = action_text(with_instruction(task, policy.instruction), policy.lines)
        assert raw.replace(f"\n\n{AUTHORITY_POLICY}", "") == action_text(task, plain.lines)


def gen(task: str, target: str, kind: str, condition: str, correct: bool) -> GeneratedAction:
    return GeneratedAction(task, target, kind, "s", condition, "", True, None, correct, None)


# target: (task, kind, plain T_C, plain U_C, policy T_C, policy U_C) correctness
OUTCOMES = {
    "a": ("t1", "tool", True, False, True, True),
    "b": ("t1", "slot", True, False, True, False),
    "c": ("t2", "tool", False, False, True, True),
    "d": ("t3", "slot", True, True, False, True),
}


def constructed() -> list[GeneratedAction]:
    names = ("plain:T_C", "plain:U_C", "policy:T_C", "policy:U_C")
    rows = [
        gen(task, target, kind, name, ok)
        for target, (task, kind, *correct) in OUTCOMES.items()
        for name, ok in zip(names, correct, strict=True)
    ]
    rows += [gen("t1", "a", "tool", "plain:base", True), gen("t1", "b", "slot", "plain:base", False)]
    return [*rows, gen("t3", "e", "slot", "plain:U_C", False)]  # e lacks cells: outside the cohort


def test_stats_match_hand_counts() -> None:
    s = summarise_guardrail(constructed(), n_resamples=200)
    assert (s.n_generations, s.n_targets) == (19, 5)
    v = {(x.variant, x.cell): x for x in s.variants}
    plain, policy = v["plain", "all"], v["policy", "all"]
    assert plain.n_targets == policy.n_targets == 4
    assert (plain.trusted_error.successes, plain.untrusted_error.successes) == (1, 3)  # c; a, b, c
    assert plain.sensitivity == 0.5 and (plain.mcnemar.b, plain.mcnemar.c) == (2, 0)
    assert plain.mcnemar.p_value == pytest.approx(0.5)
    assert (plain.base_error.successes, plain.base_error.total) == (1, 2)
    assert policy.base_error is None  # no policy base generated: no rate, not a zero
    assert (policy.trusted_error.successes, policy.untrusted_error.successes) == (1, 1)  # d; b
    assert policy.sensitivity == 0 and (policy.mcnemar.b, policy.mcnemar.c) == (1, 1)
    assert plain.interval is not None and plain.interval.n_clusters == 3
    assert plain.interval.low <= 0.5 <= plain.interval.high
    tool = v["plain", "tool"]
    assert tool.n_targets == 2 and tool.untrusted_error.successes == 2 and tool.trusted_error.successes == 1

    c = {(x.endpoint, x.cell): x for x in s.changes}
    untrusted = c["untrusted-competition error", "all"]
    assert (untrusted.plain, untrusted.policy, untrusted.difference) == (0.75, 0.25, -0.5)
    assert (untrusted.mcnemar.b, untrusted.mcnemar.c) == (0, 2)  # a, c correct only under policy
    trusted = c["trusted-competition error", "all"]
    assert trusted.difference == 0 and (trusted.mcnemar.b, trusted.mcnemar.c) == (1, 1)  # d; c
    sensitivity = c["competition source sensitivity", "all"]
    assert (sensitivity.plain, sensitivity.policy, sensitivity.difference) == (0.5, 0.0, -0.5)
    assert sensitivity.mcnemar is None


def test_empty_cohort_has_no_rates() -> None:
    s = summarise_guardrail([gen("t", "e", "tool", "plain:U_C", False)], n_resamples=100)
    assert s.variants and s.changes
    assert all(v.n_targets == 0 and v.untrusted_error is None and v.mcnemar is None for v in s.variants)
    assert all(c.difference is None and c.interval is None for c in s.changes)


def fake_decode(task: AttributionTask, lines: list[str]) -> str:
    """Correct exactly when the authority policy reached the system instruction."""
    return scripted_action(task, AUTHORITY_POLICY in task.interface.system_instruction)


def test_run_resumes_and_reports(
    sqlite_store, tasks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    rows = generate_resumably(sqlite_store, "gr1", "guardrail", tasks, fake_decode)
    assert len(rows) == 6 * len(tasks)
    assert all(r.correct == r.condition.startswith("policy:") for r in rows)

    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    args = ["score", "report", "gr1", "--out", str(tmp_path), "--resamples", "200", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["tables"]) == {"guardrail_errors", "guardrail_change"}
    n = len(tasks)
    change = {(r["endpoint"], r["cell"]): r for r in data["tables"]["guardrail_change"]}
    assert change["untrusted-competition error", "all"]["policy − plain"] == "-100.0%"
    assert change["untrusted-competition error", "all"]["McNemar"].startswith(f"0 vs {n}")
    errors = {(r["variant"], r["cell"]): r for r in data["tables"]["guardrail_errors"]}
    assert errors["plain", "all"]["U_C error"].startswith(f"{n}/{n}")
    assert errors["policy", "slot"]["U_C error"] == "n/a"
    assert (tmp_path / "gr1-guardrail_change.csv").read_text().startswith("endpoint,cell,")
