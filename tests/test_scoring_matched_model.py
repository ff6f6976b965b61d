"""`auditor score run --experiment matched` end to end on the real local model, one target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.action_contexts import action_contexts
from scoring.datasets import build_dataset
from scoring.interventions import CONTEXTS, CONTROL, COPRESENT, SUPPORT, copresent_contexts
from scoring.prompts import PromptParts, query_text, scaffold_text
from scoring.runs import read_matched, run_stream
from scoring.scorer import naive_scores, tokenize_parts

pytestmark = [pytest.mark.model, pytest.mark.slow]

RUN = ["score", "run", "--dataset", "agentaudit", "--experiment", "matched", "--limit", "1"]
RUN += ["--target-kind", "tool", "--run-id", "matched-e2e"]


def test_matched_run_resumes_and_reports(smollm2, score_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sqlite_store = score_cli.store
    first = score_cli(RUN)
    assert first.exit_code == 0, first.output
    _, rows = read_matched(sqlite_store, "matched-e2e")
    assert (
        len(rows) == 1
        and rows[0].target_id == "tool"
        and list(rows[0].scores) == [*CONTEXTS, *CONTROL, *SUPPORT, *COPRESENT]
    )

    task = build_dataset("agentaudit")[0]
    target = next(t for t in task.targets if t.target_id == "tool")
    contexts = {c.condition: c for c in action_contexts(task, target)}
    contexts |= {c.condition: c for c in copresent_contexts(task, target, contexts["base"].lines)}
    for name in ("U_C", "flip_T", "drop_U", "dup_U"):  # appended, in place, a subsequence: vs whole prompts
        lines = contexts[name].lines
        parts = PromptParts(scaffold_text(task), lines, [query_text(target)], [target.target_string])
        (ref,) = naive_scores(
            smollm2.model, tokenize_parts(smollm2.tokenizer, parts), [(1 << len(lines)) - 1], [0]
        )
        assert rows[0].scores[name]["sum_logodds"] == pytest.approx(float(ref.sum_logodds[0]), abs=1e-3)

    version = sqlite_store.stream_version(run_stream("matched-e2e"))
    again = score_cli(RUN)
    assert again.exit_code == 0 and "0 target(s) scored, 1 already" in again.output
    assert sqlite_store.stream_version(run_stream("matched-e2e")) == version

    report = score_cli(["score", "report", "matched-e2e", "--out", str(tmp_path), "--json"])
    assert report.exit_code == 0, report.output
    tables = json.loads(report.output)["tables"]
    for name, column in (
        ("matched", "ΔΔ"),
        ("same_proposition", "R_T − R_U"),
        ("support_arm", "trusted − untrusted"),
    ):
        tool = next(r for r in tables[name] if r["cell"] == "tool")
        assert tool["targets"] == "1" and tool[column] != "n/a"
        assert (tmp_path / f"matched-e2e-{name}.csv").exists()
    copresent = next(r for r in tables["co_present"] if r["cell"] == "tool")
    assert copresent["targets"] == "1" and copresent["gap"] != "n/a"

    # the §15.6 explicit authority-instruction variant: the same target under the policy prompt
    policy = score_cli([*RUN[:-1], "matched-policy", "--instruction", "policy"])
    assert policy.exit_code == 0, policy.output
    config, (row,) = read_matched(sqlite_store, "matched-policy")
    assert config["instruction"] == "policy" and list(row.scores) == list(rows[0].scores)
    assert row.scores["base"]["sum_logodds"] != rows[0].scores["base"]["sum_logodds"]  # the prompt changed
