"""aider chat histories: the importer on real histories (tests/fixtures/real/aider/SOURCES.md) —
who wrote each line, the edits aider applied, the commands it ran — and what the coding facts can
and cannot read from a history that keeps no command's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.audit.test_timeline import timeline
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real" / "aider"
DIFFS = REAL / "shell_commands_search_replace_commits_chat_history.md"  # SEARCH/REPLACE, commits, commands
LINTED = REAL / "whole_edit_lint_autofix_commits_chinese_chat_history.md"  # whole files, a lint run
LOOP = REAL / "pytest_failure_loop_whole_edit_then_pass_chat_history.md"  # a script feeding pytest output


def _trace(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def _pairs(trace: Trace, tool: str) -> list[tuple]:
    results = {s.refs.reply_to: s for s in trace.steps if s.kind is StepKind.tool_result and s.refs}
    return [
        (s, results.get(s.step_id))
        for s in trace.steps
        if s.kind is StepKind.tool_call and s.tool.name == tool
    ]


@pytest.mark.parametrize("path", [DIFFS, LINTED, LOOP], ids=["diffs", "linted", "loop"])
def test_a_history_is_detected_as_aider(path):
    assert detect(path)[0] == "aider"


def test_each_mark_says_who_wrote_the_line():
    trace = _trace(DIFFS)
    first = next(s for s in trace.steps if s.actor_kind is ActorKind.human)
    assert first.content.startswith("add a comment at the top of schemas/pipeline_config_schema.ts")
    assert not first.content.startswith("####") and not first.content.endswith("  ")
    assert trace.header.task == first.content
    starts = [s for s in trace.steps if s.content.startswith("aider chat started at ")]
    assert len(starts) == 9 and all((s.actor, s.actor_kind) == ("aider", ActorKind.system) for s in starts)
    meta = trace.header.metadata
    assert (meta["versions"], meta["models"]) == (["0.85.1", "0.85.2"], ["gpt-4o", "gpt-4.1"])
    replies = [s for s in trace.steps if s.actor == "agent" and s.kind is StepKind.message]
    assert replies and all(not s.content.startswith("> ") for s in replies)


def test_search_replace_blocks_aider_applied_are_edits_answered_where_it_applied_them():
    trace = _trace(DIFFS)
    edits = _pairs(trace, "edit")
    assert len(edits) == 17 and all(
        r is not None and r.content.startswith("Applied edit to ") for _, r in edits
    )
    call, result = edits[0]
    assert call.tool.arguments == {
        "file_path": "aider-afi.sh",
        "old_string": "",
        "new_string": '#!/bin/bash\n# Script to aid AFI operations\n\necho "Aiding AFI operations..."\n'
        "# Add your aiding logic here\n",
    }
    assert call.content.startswith("aider-afi.sh\n```bash\n<<<<<<< SEARCH") and result.content.endswith(
        "aider-afi.sh"
    )
    facts = TestRunFacts(trace)
    assert {"aider-afi.sh", "sync-afi.sh", "schemas/index.ts"} <= set(facts.changed)


def test_commands_aider_ran_are_the_agents_calls_whose_output_the_history_does_not_keep():
    trace = _trace(DIFFS)
    shells = _pairs(trace, "shell")
    assert [command_of(c) for c, _ in shells][:2] == [
        "chmod +x ~/AFI_Modular_Repos/*.sh",
        "chmod +x sync-afi.sh aider-afi.sh",
    ]
    assert all(c.actor == "agent" and r is None for c, r in shells)
    report = run_rules_audit(trace)
    # no run's output is kept, so nothing can show a change never ran: no coding finding
    assert not [f for f in report.findings if f.detector == "coding_verification"]
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_aiders_lint_run_is_a_check_answered_by_its_output_and_failed_when_it_offered_a_fix():
    trace = _trace(LINTED)
    ((lint, output),) = _pairs(trace, "shell")
    assert "-m flake8" in command_of(lint)
    assert output.raw["status"] == "error" and "F821 undefined name 'DecoderBlock'" in output.content
    run = next(r for r in TestRunFacts(trace).runs if r.call == trace.steps.index(lint))
    assert not run.ok
    entry = next(e for e in timeline(trace).entries if e.step == lint.step_id)
    assert entry.result == "failed (reported errors)"  # no exit code, and no harness stopped it
    later = [c for c, _ in _pairs(trace, "edit") if trace.steps.index(c) > trace.steps.index(output)]
    assert later and later[0].tool.arguments["file_path"] == "models.py"  # the fix aider then applied


def test_a_name_aider_took_from_prose_is_no_edit():
    """Two replies in the loop's history made aider write "files" named after a sentence."""
    trace = _trace(LOOP)
    assert [c.tool.arguments["file_path"] for c, _ in _pairs(trace, "edit")] == [
        "tools/goal_runner.py",
        "core/swe_agent/tools.py",
    ]
    bogus = [
        s for s in trace.steps if s.actor == "aider" and s.content.startswith("Applied edit to The error")
    ]
    assert len(bogus) == 2


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_bytes(DIFFS.read_bytes()[:400] + b"\n#### fix \xff it  \n")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "aider")).steps())
    assert str(path) in str(caught.value) and "not UTF-8" in str(caught.value)


def test_a_fence_the_model_never_closed_ends_at_aiders_next_line(tmp_path):
    """The history with a reply's code fence left open: aider's next marked line (it ends with
    aider's line break) still opens its notice, and the principal's turns after it are still theirs."""
    lines = DIFFS.read_text(encoding="utf-8").split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("> Tokens: "))
    lines.insert(at - 1, "```python")
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    opened, whole = _trace(path), _trace(DIFFS)
    humans = [s.content for s in opened.steps if s.actor_kind is ActorKind.human]
    assert humans == [s.content for s in whole.steps if s.actor_kind is ActorKind.human]
    assert len(_pairs(opened, "edit")) == len(_pairs(whole, "edit")) == 17
