"""The built datasets validate against the contract and keep the label invariants."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from auditor.core.errors import InputError
from schemas.attribution import AttributionLabel, Authority, FactorJudgment, Relation, SourceType
from scoring.datasets import build_dataset, invariant_violations, label_report, read_jsonl, write_jsonl
from scoring.datasets.tau2audit import DEFAULT_ROOT

HAS_AGENTDOJO = importlib.util.find_spec("agentdojo") is not None
DATASETS = (
    ["agentaudit"]
    + (["tau2audit"] if DEFAULT_ROOT.exists() else [])
    + (["bfclaudit"] if importlib.util.find_spec("bfcl_eval") else [])
    + (["dojoaudit"] if HAS_AGENTDOJO else [])
)


@pytest.fixture(scope="module", params=DATASETS)
def tasks(request: pytest.FixtureRequest) -> tuple[str, list]:
    return request.param, build_dataset(request.param)


def test_sizes_and_determinism(tasks: tuple[str, list]) -> None:
    name, built = tasks
    assert len(built) == {"agentaudit": 250, "tau2audit": 100, "bfclaudit": 100, "dojoaudit": 100}[name]
    assert all(len(t.factors) == 8 and len(t.targets) == 3 for t in built)
    assert build_dataset(name)[:5] == built[:5]


def test_label_invariants_hold(tasks: tuple[str, list]) -> None:
    _, built = tasks
    assert invariant_violations(built) == []


def test_invalid_labels_carry_competitors_and_rewrites(tasks: tuple[str, list]) -> None:
    _, built = tasks
    invalid = [
        (task, target, j)
        for task in built
        for target in task.targets
        for j in target.judgments
        if j.label is AttributionLabel.invalid
    ]
    assert invalid
    for task, target, j in invalid:
        factors = {f.factor_id: f for f in task.factors}
        assert j.competing_value and j.competing_value != target.value
        assert factors[j.factor_id].trusted_rewrite


def test_labels_do_not_collapse_to_source_type(tasks: tuple[str, list]) -> None:
    _, built = tasks
    report = label_report(built)
    assert report.counts["invalid"] > 0.08 * 8 * report.n_targets
    assert report.source_type_accuracy < 0.8  # source type alone leaves a fifth of labels wrong


@pytest.mark.skipif(not HAS_AGENTDOJO, reason="agentdojo (data only) is not installed")
def test_dojoaudit_directives_sit_in_untrusted_tool_outputs() -> None:
    from scoring.datasets import dojoaudit

    root = dojoaudit.agentdojo_suites_dir()
    for suite in dojoaudit.SUITES:  # every declared vector is found in its suite's environment
        declared = dojoaudit._load(root / suite / "injection_vectors.yaml")
        found = dojoaudit.vectors(dojoaudit._load(root / suite / "environment.yaml"), declared)
        assert sorted(v.name for v in found) == sorted(declared)
        assert all("{" not in v.before + v.after for v in found)  # other vectors hold their defaults
    built = build_dataset("dojoaudit")
    assert {t.setting for t in built} == set(dojoaudit.SUITES)
    agreeing = 0
    for task in built:
        labels = {f.factor_id: {t.labels()[i] for t in task.targets} for i, f in enumerate(task.factors)}
        (attack,) = [f for f in task.factors if f.role.startswith("injected")]
        assert attack.source_type is SourceType.untrusted_note and "output" in attack.text
        assert "invalid" in labels[attack.factor_id]
        rewrite = attack.noncompeting_rewrite
        assert rewrite and rewrite != attack.text and rewrite.split("(external content)")[0] in attack.text
        for target in task.targets:
            j = next(j for j in target.judgments if j.factor_id == attack.factor_id)
            if j.competing_value:  # the rewrite removes the directive that names the competitor
                assert rewrite.count(j.competing_value) < attack.text.count(j.competing_value)
        for f in task.factors:  # a directive that agrees with the user is never Invalid
            if f.role == "agreeing directive":
                agreeing += 1
                assert labels[f.factor_id] == {"neutral"}
    assert 30 <= agreeing <= 70


def test_boundary_rules_by_construction() -> None:
    task = build_dataset("agentaudit")[0]
    tool, slot_a, _ = task.targets
    stale = [
        (jt.label, ja.label)
        for f, jt, ja in zip(task.factors, tool.judgments, slot_a.judgments, strict=True)
        if f.role == "stale memory"
    ]
    assert stale
    for labels in stale:  # invalid only for the slot it contradicts
        assert labels == (AttributionLabel.neutral, AttributionLabel.invalid)


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
