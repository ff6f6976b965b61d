"""`auditor score run --experiment generation` end to end on the real local model, one target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.actions import canonical_value, parse_action
from scoring.datasets import build_dataset
from scoring.decode import RESPONSE_PREFIX
from scoring.runs import read_generations, run_stream

pytestmark = [pytest.mark.model, pytest.mark.slow]

RUN = ["score", "run", "--dataset", "agentaudit", "--experiment", "generation", "--limit", "1"]
RUN += ["--target-kind", "tool", "--max-new-tokens", "24", "--run-id", "gen-e2e"]


def test_generation_run_resumes_and_reports(score_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sqlite_store = score_cli.store
    first = score_cli(RUN)
    assert first.exit_code == 0, first.output
    config, rows = read_generations(sqlite_store, "gen-e2e")
    assert config["max_new_tokens"] == 24 and config["decoding"] == "greedy"
    assert len(rows) == 9 and {r.target_id for r in rows} == {"tool"}  # one target in every context
    reference = canonical_value(build_dataset("agentaudit")[0].reference_action.tool)
    for r in rows:  # the recorded outcome is the parser's verdict on the recorded completion
        assert r.completion.startswith(RESPONSE_PREFIX)
        action = parse_action(r.completion)
        assert r.parsed == (action is not None)
        assert r.correct == (action is not None and action.tool == reference)

    version = sqlite_store.stream_version(run_stream("gen-e2e"))
    again = score_cli(RUN)
    assert again.exit_code == 0 and "0 action(s) generated, 9 already" in again.output
    assert sqlite_store.stream_version(run_stream("gen-e2e")) == version

    report = score_cli(["score", "report", "gen-e2e", "--out", str(tmp_path), "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["n_generations"] == 9
    assert next(r for r in data["tables"]["flip"] if r["cell"] == "all")["targets"] == "1"
    assert len(list(tmp_path.glob("gen-e2e-*.csv"))) == 6
