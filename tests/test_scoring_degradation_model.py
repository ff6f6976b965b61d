"""`auditor score run --experiment degradation` end to end on the real local model, one target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.actions import canonical_value, parse_action
from scoring.datasets import build_dataset
from scoring.runs import read_generations, run_stream

pytestmark = [pytest.mark.model, pytest.mark.slow]

RUN = ["score", "run", "--dataset", "agentaudit", "--experiment", "degradation", "--limit", "1"]
RUN += ["--target-kind", "tool", "--max-new-tokens", "24", "--run-id", "deg-e2e"]


def test_degradation_run_resumes_and_reports(score_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sqlite_store = score_cli.store
    first = score_cli(RUN)
    assert first.exit_code == 0, first.output
    config, rows = read_generations(sqlite_store, "deg-e2e")
    assert config["experiment"] == "degradation" and config["max_new_tokens"] == 24
    assert [r.condition for r in rows] == ["full", "mixed:f0", "clean:f0"]  # the tool target's one Valid
    reference = canonical_value(build_dataset("agentaudit")[0].reference_action.tool)
    for r in rows:  # the recorded outcome is the parser's verdict on the recorded completion
        action = parse_action(r.completion)
        assert r.correct == (action is not None and action.tool == reference)

    version = sqlite_store.stream_version(run_stream("deg-e2e"))
    again = score_cli(RUN)
    assert again.exit_code == 0 and "0 action(s) generated, 3 already" in again.output
    assert sqlite_store.stream_version(run_stream("deg-e2e")) == version

    report = score_cli(["score", "report", "deg-e2e", "--out", str(tmp_path), "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["n_generations"] == 3 and data["n_rows"] == 1
    cell = next(r for r in data["tables"]["degradation"] if r["cell"] == "all")
    assert cell["rows"] == "1" and cell["c_F"].startswith(f"{int(rows[0].correct)}/1")
    assert len(list(tmp_path.glob("deg-e2e-*.csv"))) == 2
