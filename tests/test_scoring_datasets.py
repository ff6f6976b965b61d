"""The built datasets validate against the contract and keep the label invariants."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from auditor.errors import InputError
from schemas.attribution import AttributionLabel, Authority, FactorJudgment, Relation
from scoring.datasets import build_dataset, invariant_violations, label_report, read_jsonl, write_jsonl
from scoring.datasets.tau2audit import DEFAULT_ROOT

DATASETS = (
    ["agentaudit"]
    + (["tau2audit"] if DEFAULT_ROOT.exists() else [])
    + (["bfclaudit"] if importlib.util.find_spec("bfcl_eval") else [])
)


@pytest.fixture(scope="module", params=DATASETS)
def tasks(request: pytest.FixtureRequest) -> tuple[str, list]:
    return request.param, build_dataset(request.param)


def test_sizes_and_determinism(tasks: tuple[str, list]) -> None:
    name, built = tasks
    assert len(built) == {"agentaudit": 250, "tau2audit": 100, "bfclaudit": 100}[name]
    assert all(len(t.factors) == 8 and len(t.targets) == 3 for t in built)
    assert build_dataset(name)[:5] == built[:5]


def test_label_invariants_hold(tasks: tuple[str, list]) -> None:
    _, built = tasks
    assert invariant_violations(built) == []


def test_invalid_labels_carry_competitors_and_rewrites(tasks: tuple[str, list]) -> None:
    _, built = tasks
    for task in built:
        factors = {f.factor_id: f for f in task.factors}
        for target in task.targets:
            for j in target.judgments:
                if j.label is AttributionLabel.invalid:
                    assert j.competing_value and j.competing_value != target.value
                    assert factors[j.factor_id].trusted_rewrite


def test_labels_do_not_collapse_to_source_type(tasks: tuple[str, list]) -> None:
    _, built = tasks
    report = label_report(built)
    assert report.counts["invalid"] > 0.08 * 8 * report.n_targets
    assert report.source_type_accuracy < 0.8  # source type alone leaves a fifth of labels wrong


def test_boundary_rules_by_construction() -> None:
    task = build_dataset("agentaudit")[0]
    tool, slot_a, _ = task.targets
    for f, jt, ja in zip(task.factors, tool.judgments, slot_a.judgments, strict=True):
        if f.role == "stale memory":  # invalid only for the slot it contradicts
            assert (jt.label, ja.label) == (AttributionLabel.neutral, AttributionLabel.invalid)


def test_contract_refuses_inconsistent_labels() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        FactorJudgment(
            factor_id="f1",
            authority=Authority.unauthorized,
            relation=Relation.supports,
            label=AttributionLabel.invalid,
            reason="x",
            competing_value="y",
        )
    with pytest.raises(ValueError, match="competing_value"):
        FactorJudgment(
            factor_id="f1",
            authority=Authority.unauthorized,
            relation=Relation.competes,
            label=AttributionLabel.invalid,
            reason="x",
        )


def test_jsonl_round_trip_and_bad_line(tmp_path: Path) -> None:
    built = build_dataset("agentaudit")[:3]
    path = tmp_path / "d.jsonl"
    write_jsonl(built, path)
    assert read_jsonl(path) == built
    rows = path.read_text().splitlines()
    broken = json.loads(rows[1])
    broken["targets"][0]["judgments"][0]["label"] = "bogus"
    path.write_text("\n".join([rows[0], json.dumps(broken), rows[2]]) + "\n")
    with pytest.raises(InputError, match=r"d\.jsonl, line 2, field 'targets\.0\.judgments\.0\.label'"):
        read_jsonl(path)
