"""Coding-agent runs (issue 29): mini-SWE-agent trajectories as commands and results, test-run facts
read from real runner outputs, and the coding verification findings, on frozen real runs
(tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.detectors.test_runs import TestRunFacts, parse_output, writes_files
from auditor.engine import run_rules_audit
from auditor.errors import InputError
from auditor.report.validator import validate_report
from ingest.registry import detect, open_traces
from schemas import StepKind, Trace
from tests.cli_helpers import run
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real"
EDITED = REAL / "mini-swe-agent" / "sympy__sympy-13852.traj.json"  # unresolved; an existing test edited
CLEAN = REAL / "mini-swe-agent" / "sympy__sympy-18211.traj.json"  # tests rerun after the fix, passing
RUNS = REAL / "test-runs"


def trace_of(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def test_a_mini_swe_agent_run_is_commands_and_results():
    assert detect(EDITED)[0] == "mini-swe-agent"
    trace = trace_of(EDITED)
    steps = trace.steps
    assert trace.header.framework == "mini-SWE-agent" and trace.header.task.startswith(
        "Consider the following PR"
    )
    assert [s.actor_kind.value for s in steps[:2]] == ["system", "human"]
    calls = [s for s in steps if s.kind is StepKind.tool_call]
    assert calls and all(s.tool.name == "bash" and s.tool.arguments["command"] in s.content for s in calls)
    for call in calls:  # every call is answered by the next step, the shell's observation
        result = steps[call.index + 1]
        assert result.kind is StepKind.tool_result and result.refs.reply_to == call.step_id
        if result.content.startswith("<returncode>0<"):
            assert result.raw["status"] == "ok"
        elif result.content.startswith("<returncode>"):
            assert result.raw["status"] == "error" and result.raw["exit_code"] != 0
    assert steps[-1].kind is StepKind.final_output and steps[-1].content.startswith("diff --git")
    assert trace.header.metadata["exit_status"] == "Submitted" and "outcome" not in trace.header.metadata


def test_detection_reads_the_top_level_keys_when_info_fills_the_head(tmp_path):
    """An older file (no trajectory_format) whose ``info`` comes first and outgrows 64 KiB."""
    doc = json.loads(EDITED.read_text())
    diff = doc["info"]["submission"]
    info = dict(doc["info"], submission=diff * (70_000 // len(diff) + 1))
    path = tmp_path / "old.traj.json"
    path.write_text(json.dumps({"info": info, "messages": doc["messages"]}))
    assert b'"messages"' not in path.read_bytes()[: 64 * 1024]
    name, reason = detect(path)
    assert name == "mini-swe-agent" and "mini_version" in reason


def test_a_broken_message_names_the_field(tmp_path):
    doc = json.loads(EDITED.read_text())
    doc["messages"][3]["content"] = 7
    path = tmp_path / "bad.traj.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        trace_of(path)
    assert "messages[3].content" in info.value.one_line()


@pytest.mark.parametrize(
    ("name", "runner", "failed", "passed"),
    [
        ("pytest_failed.txt", "pytest", 1, 0),
        ("pytest_passed.txt", "pytest", 0, 11),
        ("pytest_interrupted.txt", "pytest", 2, 0),
        ("sympy_failed.txt", "sympy", 1, 8),
        ("sympy_exception.txt", "sympy", 1, 1623),
        ("unittest_failed.txt", "unittest", 2, 1),
        ("unittest_ok.txt", "unittest", 0, 1),
        ("tox_failed.txt", "tox", 1, 0),
        ("tox_ok.txt", "tox", 0, 1),
        ("nox_failed.txt", "nox", 1, 0),
        ("nox_ok.txt", "nox", 0, 1),
    ],
)
def test_runner_summaries_are_read_from_real_outputs(name, runner, failed, passed):
    text = (RUNS / name).read_text()
    found = parse_output(text)
    assert found is not None and found[:1] == (runner,) and found[2:4] == (failed, passed)
    assert found[1] in text  # the summary is a verbatim quote


def test_failed_test_ids_come_from_the_runners_own_lines():
    assert parse_output((RUNS / "pytest_failed.txt").read_text())[4] == (
        "lib/matplotlib/tests/test_axes.py::test_hist_density[png]",
    )
    assert parse_output((RUNS / "sympy_failed.txt").read_text())[4] == (
        "sympy/combinatorics/tests/test_permutations.py:test_args",
    )
    assert set(parse_output((RUNS / "unittest_failed.txt").read_text())[4]) == {
        "test_calc.AddTest.test_error",
        "test_calc.AddTest.test_add_wrong",
    }


def test_facts_of_a_run_that_edited_an_existing_test():
    facts = TestRunFacts(trace_of(EDITED))
    test_file = "sympy/functions/special/tests/test_zeta_functions.py"
    assert facts.changed[test_file].new is False and facts.changed[test_file].removed_asserts
    assert facts.test_edits(test_file)
    assert facts.source_edits and all(r.runner == "script" for r in facts.runs)  # no test runner ran


def test_an_edited_test_is_a_realized_finding_at_its_edit_that_validates():
    trace = trace_of(EDITED)
    report = run_rules_audit(trace)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    edited = next(f for f in coding if "edited the existing test" in f.title)
    assert edited.disposition.value == "realized" and edited.failure_mode == "3.3"
    facts = TestRunFacts(trace)
    edit = facts.test_edits("sympy/functions/special/tests/test_zeta_functions.py")[0]
    assert edited.first_anomalous_step == trace.steps[edit.pos].step_id
    cited = {u.step_id for u in edited.evidence}
    assert trace.steps[-1].step_id in cited  # the removed assertion, quoted from the submitted diff
    failed = run_rules_audit(trace, outcome="failed")
    assert failed.attribution.step_id != "s2"  # not the opening act


def test_a_fix_and_rerun_loop_is_not_flagged():
    trace = trace_of(CLEAN)
    facts = TestRunFacts(trace)
    assert any(r.is_test and r.ok for r in facts.runs)
    report = run_rules_audit(trace)
    flagged = {f.detector for f in report.findings}
    assert "coding_verification" not in flagged and "failure_ignored_input" not in flagged


def test_an_edit_between_a_failure_and_a_rerun_is_a_write():
    steps = trace_of(EDITED).steps
    edits = [s for s in steps if s.kind is StepKind.tool_call and writes_files(s)]
    reads = [
        s for s in steps if s.kind is StepKind.tool_call and s.tool.arguments["command"].startswith("grep")
    ]
    assert edits and reads and not any(writes_files(s) for s in reads)


def test_traces_show_prints_the_commands(tmp_path):
    ingested = run(["ingest", str(CLEAN)], tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    listed = run(["traces", "list", "--json"], tmp_path)
    trace_id = json.loads(listed.stdout)[0]["trace_id"]
    shown = run(["traces", "show", trace_id], tmp_path)
    assert shown.returncode == 0 and "tool_call [bash]" in shown.stdout and "$ " in shown.stdout
    assert "<returncode>0</returncode>" in shown.stdout
