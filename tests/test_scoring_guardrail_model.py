"""`auditor score run --experiment guardrail` end to end on the real local model, one target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scoring_support import model_run_args, run_twice

pytestmark = [pytest.mark.model, pytest.mark.slow]

RUN = model_run_args("guardrail", "guard-e2e")


def test_guardrail_run_resumes_and_reports(score_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config, rows = run_twice(score_cli, RUN, "guard-e2e")
    assert config["experiment"] == "guardrail" and config["max_new_tokens"] == 24
    assert [r.condition for r in rows] == [
        f"{v}:{c}" for v in ("plain", "policy") for c in ("base", "T_C", "U_C")
    ]

    report = score_cli(
        ["score", "report", "guard-e2e", "--out", str(tmp_path), "--resamples", "200", "--json"]
    )
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["n_generations"] == 6 and data["n_targets"] == 1
    errors = {(r["variant"], r["cell"]): r for r in data["tables"]["guardrail_errors"]}
    by = {r.condition: r for r in rows}
    for variant in ("plain", "policy"):
        wrong = int(not by[f"{variant}:U_C"].correct)
        assert errors[variant, "all"]["U_C error"].startswith(f"{wrong}/1")
    assert len(list(tmp_path.glob("guard-e2e-*.csv"))) == 2
