"""`auditor score run --experiment degradation` end to end on the real local model, one target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scoring_support import model_run_args, run_twice

pytestmark = [pytest.mark.model, pytest.mark.slow]

RUN = model_run_args("degradation", "deg-e2e")


def test_degradation_run_resumes_and_reports(score_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config, rows = run_twice(score_cli, RUN, "deg-e2e")
    assert config["experiment"] == "degradation" and config["max_new_tokens"] == 24
    assert [r.condition for r in rows] == ["full", "mixed:f0", "clean:f0"]  # the tool target's one Valid

    report = score_cli(["score", "report", "deg-e2e", "--out", str(tmp_path), "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["n_generations"] == 3 and data["n_rows"] == 1
    cell = next(r for r in data["tables"]["degradation"] if r["cell"] == "all")
    assert cell["rows"] == "1" and cell["c_F"].startswith(f"{int(rows[0].correct)}/1")
    assert len(list(tmp_path.glob("deg-e2e-*.csv"))) == 2
