"""Generation runs without a model: the per-target contexts, resumable events, and the CLI report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.surfaces.cli.main import app
from schemas.attribution import AttributionLabel, AttributionTask
from scoring.action_contexts import CONDITIONS, TRUSTED_FRAME, UNTRUSTED_FRAME, action_contexts
from scoring.datasets import build_dataset
from scoring.prompts import factor_line
from scoring.runs import n_generations, read_generations, run_generation, run_stream, start_run


@pytest.fixture(scope="module")
def tasks() -> list[AttributionTask]:
    return build_dataset("agentaudit")[:2]


def test_contexts_change_one_thing_at_a_time(tasks: list[AttributionTask]) -> None:
    task = tasks[0]
    target = next(t for t in task.targets if any(j.label is AttributionLabel.invalid for j in t.judgments))
    ctx = {c.condition: c for c in action_contexts(task, target)}
    assert list(ctx) == list(CONDITIONS)
    labels = target.labels()
    base = [factor_line(f.text) for f, lab in zip(task.factors, labels, strict=True) if lab != "invalid"]
    assert ctx["base"].lines == base
    for relation, text in (("S", target.supporting_proposition), ("C", target.competing_proposition)):
        t, u = ctx[f"T_{relation}"].lines, ctx[f"U_{relation}"].lines
        assert t[:-1] == u[:-1] == base
        assert t[-1] == f"- Source status: {TRUSTED_FRAME}. Proposition: {text}\n"
        assert u[-1] == t[-1].replace(TRUSTED_FRAME, UNTRUSTED_FRAME)
    assert ctx["T_C"].competitor == ctx["U_C"].competitor == target.competing_value
    first_invalid = labels.index("invalid")
    changed = [(a, b) for a, b in zip(ctx["flip_U"].lines, ctx["flip_T"].lines, strict=True) if a != b]
    assert changed == [
        (
            factor_line(task.factors[first_invalid].text),
            factor_line(task.factors[first_invalid].trusted_rewrite),
        )
    ]
    assert ctx["flip_T"].competitor == target.judgments[first_invalid].competing_value
    valid_line = factor_line(task.factors[labels.index("valid")].text)
    assert valid_line in base and valid_line not in ctx["drop"].lines
    assert ctx["drop_U"].lines[:-1] == ctx["drop"].lines and UNTRUSTED_FRAME in ctx["drop_U"].lines[-1]


def test_targets_without_invalid_factors_have_no_flip() -> None:
    targets = [(task, target) for task in build_dataset("agentaudit")[:20] for target in task.targets]
    assert {"invalid" in target.labels() for _, target in targets} == {True, False}  # both kinds checked
    for task, target in targets:
        names = [c.condition for c in action_contexts(task, target)]
        has_invalid = "invalid" in target.labels()
        assert ("flip_U" in names) == has_invalid and len(names) == (9 if has_invalid else 7)


def fake_decode(task: AttributionTask, lines: list[str]) -> str:
    """Obeys an untrusted note, ignores trusted ones, and garbles the rest: varied outcomes."""
    ref = task.reference_action
    if any(UNTRUSTED_FRAME in line for line in lines):
        return "```json\n" + json.dumps({"tool": ref.tool, "arguments": ref.arguments}) + "\n```"
    if any(TRUSTED_FRAME in line for line in lines):
        return '{"tool": "' + ref.tool + '", "arguments": {}}'
    return "I cannot decide."


def test_run_resumes_and_a_rerun_appends_nothing(sqlite_store, tasks: list[AttributionTask]) -> None:  # type: ignore[no-untyped-def]
    start_run(sqlite_store, "g1", {"dataset": "agentaudit", "model": "fake", "experiment": "generation"})
    first = n_generations(tasks[:1])
    assert run_generation(sqlite_store, "g1", tasks[:1], fake_decode) == (first, 0)
    total = n_generations(tasks)
    calls: list[int] = []
    counted = lambda t, lines: calls.append(1) or fake_decode(t, lines)  # noqa: E731
    assert run_generation(sqlite_store, "g1", tasks, counted) == (total - first, first)
    assert len(calls) == total - first
    version = sqlite_store.stream_version(run_stream("g1"))
    assert run_generation(sqlite_store, "g1", tasks, counted) == (0, total)
    assert sqlite_store.stream_version(run_stream("g1")) == version and len(calls) == total - first
    _, rows = read_generations(sqlite_store, "g1")
    assert len(rows) == total == len({(r.target_key, r.condition) for r in rows})
    by = {(r.target_key, r.condition): r for r in rows}
    tool = f"{tasks[0].task_id}/tool"
    assert by[(tool, "U_S")].correct and by[(tool, "T_S")].correct  # the tool parses in both forms
    assert not by[(tool, "base")].parsed and not by[(tool, "base")].correct
    slot = tasks[0].targets[1]
    assert not by[(f"{tasks[0].task_id}/{slot.target_id}", "T_S")].correct  # key absent from arguments


def test_kind_filter_and_cli_report(
    sqlite_store, tasks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    start_run(sqlite_store, "g2", {"dataset": "agentaudit", "model": "fake", "experiment": "generation"})
    done, _ = run_generation(sqlite_store, "g2", tasks, fake_decode, kinds={"tool"})
    assert done == n_generations(tasks, {"tool"}) == sum(len(action_contexts(t, t.targets[0])) for t in tasks)
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    result = CliRunner().invoke(
        app, ["score", "report", "g2", "--out", str(tmp_path), "--resamples", "200", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["n_targets"] == 2 and set(data["tables"]) == {
        "accuracy", "discordance", "contrast", "competitor", "flip", "rescue"
    }  # fmt: skip
    support = next(
        r for r in data["tables"]["discordance"] if r["relation"] == "support" and r["cell"] == "all"
    )
    assert support["pairs"] == "2" and support["discordant"].startswith("0/2")
    slot = next(
        r for r in data["tables"]["discordance"] if r["relation"] == "support" and r["cell"] == "slot"
    )
    assert slot["discordant"] == "n/a"
    assert (tmp_path / "g2-rescue.csv").read_text().startswith("arm,")
    text = CliRunner().invoke(app, ["score", "report", "g2", "--out", str(tmp_path)], env={"COLUMNS": "250"})
    assert text.exit_code == 0 and "authority flip" in text.output
    listed = json.loads(CliRunner().invoke(app, ["score", "runs", "--json"]).output)
    g2 = next(r for r in listed if r["run_id"] == "g2")
    assert (g2["experiment"], g2["records"], g2["requests"], g2["seconds"]) == (
        "generation",
        done,
        done,
        None,
    )


def test_unknown_target_kind_is_one_line() -> None:
    result = CliRunner().invoke(
        app,
        ["score", "run", "--dataset", "agentaudit", "--experiment", "generation", "--target-kind", "args"],
    )
    assert result.exit_code != 0
    assert "unknown target kind 'args'" in str(result.exception) + result.output


def test_report_with_a_coalition_run_adds_the_prediction_table(
    sqlite_store, tasks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from scoring.runs import SCORE_FIELDS, target_event

    pytest.importorskip("sklearn")

    same = {"dataset": "agentaudit", "model": "fake"}
    start_run(sqlite_store, "g3", {**same, "experiment": "generation"})
    run_generation(sqlite_store, "g3", tasks, fake_decode)
    start_run(sqlite_store, "c3", {**same, "experiment": "coalition"})
    game = np.arange(256, dtype=float)
    for task in tasks:
        events = [
            target_event("c3", task, i, np.arange(256), dict.fromkeys(SCORE_FIELDS, game), 3)
            for i in range(len(task.targets))
        ]
        sqlite_store.append(run_stream("c3"), events)
    start_run(sqlite_store, "c4", {"dataset": "tau2audit", "model": "fake", "experiment": "coalition"})
    monkeypatch.setattr("auditor.surfaces.cli.score_cmd.open_cli_store", lambda: sqlite_store)
    args = [
        "score",
        "report",
        "g3",
        "--out",
        str(tmp_path),
        "--resamples",
        "200",
        "--json",
        "--coalition-run",
    ]
    result = CliRunner().invoke(app, [*args, "c3"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)["tables"]["rescue_prediction"]
    assert [r["features"] for r in table] == ["dataset/target kind", "leave-one-out", "empty Harsanyi"]
    assert all(r["AUROC"] == "n/a" for r in table)  # two source tasks cannot fill five folds
    assert (tmp_path / "g3-rescue_prediction.csv").exists()
    wrong = CliRunner().invoke(app, [*args, "c4"])
    assert wrong.exit_code != 0 and "dataset 'tau2audit'" in str(wrong.exception) + wrong.output
