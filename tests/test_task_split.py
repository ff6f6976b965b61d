"""The development discipline of benchmarks/outcome_eval.py: every trial of a task falls in the same
half, the split never changes, the calibration error is the textbook one, and the τ-bench task
whose rewarded runs cancel a reservation τ²-bench's corrected task forbids cancelling is found."""

from __future__ import annotations

import csv
from collections import defaultdict
from itertools import pairwise

import pytest

from benchmarks.task_split import corrected_tasks, ece, half, task_of
from ingest import open_traces
from schemas import Trace
from tests.conftest import DATA


def test_trials_of_a_task_share_a_half_and_the_split_is_fixed() -> None:
    assert (
        task_of("airline-task041-trial0.json")
        == task_of("runs/airline-task041-trial3.json")
        == "airline-task041"
    )
    assert task_of("hand-crafted/11.json") == "hand-crafted/11"  # a Who&When case is its own task
    assert [half(f"airline-task{i:03d}") for i in (0, 1, 27, 43)] == ["A", "B", "B", "A"]


def test_ece() -> None:
    assert ece([1.0, 1.0], [True, True]) == 0.0
    assert ece([0.9, 0.9, 0.1, 0.1], [True, False, False, False]) == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)


@pytest.mark.skipif(not (DATA / "tau2").exists(), reason="needs ../shared/data/tau2 and taubench")
def test_the_task_tau2_corrected_is_found_from_the_data() -> None:
    root = DATA / "taubench" / "airline"
    runs: dict[str, list[tuple[Trace, str]]] = defaultdict(list)
    with (root / "outcomes.csv").open() as f:
        for row in csv.DictReader(f):
            for imported in open_traces(root / "runs" / row["file"]):
                trace = Trace(header=imported.header, steps=list(imported.steps()))
                runs[task_of(row["file"])].append((trace, row["outcome"]))
    writes = {"book_reservation", "cancel_reservation", "send_certificate", "update_reservation_flights",
              "update_reservation_baggages", "update_reservation_passengers"}  # fmt: skip
    assert corrected_tasks(DATA / "tau2" / "airline", runs, writes) == {"airline-task027": "9"}


def test_the_auroc_interval_resamples_tasks_not_runs() -> None:
    """Three identical trials of each task are one task's evidence, not three runs' worth: the
    interval is the same as with one trial each, and it holds the point estimate."""
    from benchmarks.outcome_eval import auroc_interval, summary

    scores = [0.9, 0.7, 0.5, 0.5, 0.3, 0.1, 0.8, 0.2, 0.4, 0.6]
    failed = [True, True, False, True, False, False, True, False, False, True]

    def rows(trials: int) -> list[dict]:
        return [
            {"task": f"t{i}", "risk_score": s, "outcome": "failed" if f else "succeeded", "actionable": 0}
            for i, (s, f) in enumerate(zip(scores, failed, strict=True))
            for _ in range(trials)
        ]

    one, three = summary(rows(1)), summary(rows(3))
    assert one["auroc_interval"] == three["auroc_interval"]
    low, high = one["auroc_interval"]
    assert low < one["auroc_risk_score"] < high and low >= 0.0 and high <= 1.0
    assert auroc_interval([r for r in rows(1) if r["outcome"] == "failed"]) is None  # one class only
    # a label's interval (here: succeeded) mirrors failure's, resample for resample
    mirrored = auroc_interval(rows(1), lambda r: r["outcome"] == "succeeded")
    assert mirrored == pytest.approx([1 - high, 1 - low], abs=1e-9)


def test_the_roc_curve_encloses_the_auroc_and_the_plot_is_written_whole(tmp_path) -> None:
    """The curve's area (trapezoids: tied runs move it diagonally) is the AUROC with ties counted
    one half; ``--plot`` writes the image under its name and leaves no partial file."""
    import random

    from benchmarks.outcome_eval import auroc_interval, plot_roc
    from scoring.stats.auroc import auroc, roc_points

    rng = random.Random(7)
    for _ in range(50):
        pos = [rng.choice([0.0, 0.045, 0.3, 0.48, 0.5]) for _ in range(rng.randint(1, 12))]
        neg = [rng.choice([0.0, 0.045, 0.3, 0.48, 0.5]) for _ in range(rng.randint(1, 12))]
        points = roc_points(pos, neg)
        area = sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in pairwise(points))
        assert area == pytest.approx(auroc(pos, neg)) and points[-1] == (1.0, 1.0)
    rows = [
        {"task": f"t{i}", "risk_score": s, "outcome": o, "actionable": 0}
        for i, (s, o) in enumerate([(0.5, "failed"), (0.1, "succeeded"), (0.3, "failed"), (0.3, "succeeded")])
    ]
    out = tmp_path / "roc.png"
    plot_roc({"all": (rows, auroc_interval(rows))}, out, "test")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and [p.name for p in tmp_path.iterdir()] == [
        "roc.png"
    ]
