"""Comparing auditor runs and the graph ablation, with replayed models (recorded, realistic responses):
the V3 contract against the naive arm through `auditor compare-auditors`, and the three graph arms
paired under a condition-blind reviewer that is never shown which arm filed what."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.agent import run_agent_audit
from auditor.audit.agent.ablation import PAIRS, blind_findings, run_ablation
from auditor.audit.agent.compare import compare_runs, load_run
from auditor.core.errors import InputError
from schemas import GraphMode, LabelsRecord, Trace
from tests.cli_helpers import run
from tests.conftest import REPO
from tests.test_detector_state_drift import load

CASSETTES = REPO / "tests" / "fixtures" / "cassettes"
EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
pytestmark = pytest.mark.slow  # litellm's import alone takes seconds


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load(EXAMPLE)


@pytest.fixture(scope="module")
def runs(trace: Trace, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("runs")
    v3 = run_agent_audit(trace, f"replay/{CASSETTES / 'renewal_drift_v3.jsonl'}")
    naive = run_agent_audit(trace, f"replay/{CASSETTES / 'renewal_drift_naive.jsonl'}", contract="naive")
    (out / "v3").mkdir()
    (out / "v3" / "r.json").write_text(v3.model_dump_json())
    (out / "naive.json").write_text(json.dumps([naive.model_dump(mode="json")]))
    return out / "v3", out / "naive.json"


def test_contract_not_model_drives_checkability(trace, runs):
    a, b = (load_run(p) for p in runs)
    result = compare_runs(a, b, {trace.header.trace_id: trace}, {trace.header.trace_id: True})
    v3, naive = result.arms
    assert result.shared == 1 and v3.schema_valid == naive.schema_valid == 1
    assert (v3.findings, v3.resolvable_findings) == (1, 1)
    assert naive.findings == 2 and naive.resolvable_findings < 2 and naive.resolved_units < naive.units
    assert v3.positive_flagged == 1 and v3.seeded_positive == 1


def test_compare_auditors_cli(runs, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        LabelsRecord(trace_id=load(EXAMPLE).header.trace_id, labels={"target_fired": True}).model_dump_json()
        + "\n"
    )
    out = run(
        [
            "compare-auditors",
            str(runs[0]),
            str(runs[1]),
            "--traces",
            str(EXAMPLE),
            "--labels",
            str(labels),
            "--json",
        ],
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["shared_bundles"] == 1 and data["arms"][0]["resolvable_share"] == 1.0
    assert data["arms"][1]["resolvable_share"] < 1.0
    table = run(["compare-auditors", str(runs[0]), str(runs[1]), "--traces", str(EXAMPLE)], tmp_path)
    assert "resolvable findings" in table.stdout and "decision agreement" in table.stdout


def test_a_run_auditing_one_trace_twice_is_refused(tmp_path, runs):
    report = json.loads(next(runs[0].glob("*.json")).read_text())
    (tmp_path / "twice.json").write_text(json.dumps([report, report]))
    with pytest.raises(InputError, match="audited twice"):
        load_run(tmp_path / "twice.json")
    out = run(
        ["compare-auditors", str(tmp_path / "twice.json"), str(runs[1]), "--traces", str(EXAMPLE)], tmp_path
    )
    assert out.returncode == 2 and "audited twice" in out.stderr and "Traceback" not in out.stderr


def test_graph_ablation_pairs_arms_under_a_blind_reviewer(trace, sqlite_store):
    from auditor.core.llm_providers import REPLAY

    labels = LabelsRecord(
        trace_id=trace.header.trace_id,
        labels={"world": "example", "target_fired": True, "key_steps": ["s03", "s07"], "judgments": []},
    )
    reviewer = str(CASSETTES / "blind_reviewer.jsonl")
    runs, reviews, rows = run_ablation(
        [(trace, labels)],
        f"replay/{CASSETTES / 'renewal_drift_v3.jsonl'}",
        f"replay/{reviewer}",
        sqlite_store,
    )
    assert set(runs) == set(GraphMode) and all(
        reviews[m][trace.header.trace_id].identifies for m in GraphMode
    )
    for mode in GraphMode:
        r = runs[mode][trace.header.trace_id]
        assert r.model_calls == 7 and r.input_tokens > 0 and r.resolved_final == r.units_final == 2
        assert r.resolved_first < r.units_first  # the revise loop repaired the first submission
    tools = {m: runs[m][trace.header.trace_id].tool_calls for m in GraphMode}
    assert tools[GraphMode.annotated] == tools[GraphMode.none] == 5  # absent tools still count as attempts
    assert [(r.arm_a, r.arm_b) for r in rows] == [(a.value, b.value) for a, b in PAIRS]
    assert all(r.positives == 1 and r.found_only_a == r.found_only_b == 0 for r in rows)
    assert all(r.tokens_p == 1.0 for r in rows)  # identical replayed usage: no token difference
    for request in REPLAY.requests[reviewer]:
        text = json.dumps(request)
        assert "graph_mode" not in text and "agent/v3" not in text and "topology" not in text
    assert "graph_mode" not in json.dumps(
        blind_findings(runs[GraphMode.annotated][trace.header.trace_id].report)
    )
