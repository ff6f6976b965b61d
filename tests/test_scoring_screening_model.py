"""`auditor score run --experiment screening` end to end on the real local model, one target."""

from __future__ import annotations

import json
import time

import pytest

from scoring.runs import read_screening, run_stream
from scoring.screening import DISTRACTOR, masks_through_order

pytestmark = [pytest.mark.model, pytest.mark.slow]

RUN = ["score", "run", "--dataset", "agentaudit", "--experiment", "screening", "--limit", "1"]
RUN += ["--target-kind", "tool", "--factors", "12", "--order", "2", "--run-id", "scr-e2e"]


def test_screening_run_resumes_and_reports(score_cli) -> None:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    first = score_cli(RUN)
    assert first.exit_code == 0, first.output
    config, rows = read_screening(score_cli.store, "scr-e2e")
    assert config["n_factors"] == 12 and config["order"] == 2
    (row,) = rows
    assert row.masks == masks_through_order(12, 2) and len(row.masks) == 79
    assert row.labels[8:] == [DISTRACTOR] * 4
    version = score_cli.store.stream_version(run_stream("scr-e2e"))
    again = score_cli(RUN)
    assert again.exit_code == 0 and "0 target(s) scored, 1 already" in again.output
    assert score_cli.store.stream_version(run_stream("scr-e2e")) == version

    report = score_cli(["score", "report", "scr-e2e", "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["n_targets"] == 1
    assert [r["selector"] for r in data["retention"]] == ["first_order", "pairwise", "hybrid"]
    assert all("/4 " in r["distractors kept / distractors present (Wilson 95%)"] for r in data["retention"])
    print(f"screening e2e: {time.perf_counter() - start:.1f}s")
