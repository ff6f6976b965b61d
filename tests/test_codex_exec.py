"""The Codex CLI's headless event stream (``codex exec --json``): the importer on real streams
(tests/fixtures/real/codex-exec/SOURCES.md), and the coding facts read from them. Cases the real
streams lack (a failing test run after a change, a cut-off command, a failed turn) are tested on
copies of them changed for the case, as each test says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.detectors.test_runs import TestRunFacts, command_of, exit_code
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest.registry import detect, open_traces
from schemas import ActorKind, StepKind, Trace
from schemas.trace import REFUSED
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real" / "codex-exec"
REVIEW = REAL / "superstar_reviewer_pytest_pass_git_exit128_ready_verdict.jsonl"
PROBE = REAL / "whatyterm_longrun_add_file_then_cat_config_warnings.jsonl"
EDITS = REAL / "fieldguide_nvim_edit_append_mcp_blocked_write.jsonl"
OLDER = REAL / "agentcmd_codex046_ls_command.jsonl"


def _trace(path: Path) -> Trace:
    imported = next(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", [REVIEW, PROBE, EDITS, OLDER], ids=lambda p: p.stem[:12])
def test_every_real_stream_is_detected_as_codex_exec(path):
    assert detect(path)[0] == "codex-exec"


def test_commands_are_shell_calls_answered_by_their_output_and_exit_code_even_when_run_in_parallel():
    trace = _trace(REVIEW)
    calls = [s for s in trace.steps if s.kind is StepKind.tool_call]
    results = [s for s in trace.steps if s.kind is StepKind.tool_result]
    assert len(calls) == len(results) == 14
    by_id = {s.step_id: s for s in calls}
    assert all(by_id[r.refs.reply_to].tool.call_id == r.tool.call_id for r in results)
    # three commands started before any of them finished: each call where it started, in order
    first = trace.steps.index(next(s for s in calls if s.tool.call_id == "item_15"))
    assert [s.kind for s in trace.steps[first : first + 6]] == [StepKind.tool_call] * 3 + [
        StepKind.tool_result
    ] * 3
    # the harness's argv, shell-quoted, is read as the script the shell ran
    assert calls[0].content.startswith("/usr/bin/zsh -lc ")
    assert command_of(calls[0]).startswith("sed -n '1,220p' /home/simon/")
    failed = [r for r in results if r.raw["status"] == "error"]
    assert [(exit_code(r), r.content.split("\n")[0]) for r in failed] == [
        (128, "fatal: not a git repository (or any parent up to mount point /)")
    ]
    assert trace.header.metadata["thread_id"] == "019e97db-375f-7852-b37d-9a655d25de52"
    assert trace.header.metadata["usage"]["output_tokens"] == 3483
    pytest_run = next(r for r in TestRunFacts(trace).runs if r.runner == "pytest")
    assert (pytest_run.ok, pytest_run.passed, pytest_run.failed) == (True, 107, 0)


def test_the_harness_warnings_are_its_own_words_and_a_file_added_is_a_new_file():
    trace = _trace(PROBE)
    warnings = [s for s in trace.steps if s.actor == "codex"]
    assert len(warnings) == 2 and all(s.actor_kind is ActorKind.system for s in warnings)
    assert trace.header.task is None  # the stream does not repeat the prompt
    facts = TestRunFacts(trace)
    assert {p: c.new for p, c in facts.changed.items()} == {"/Users/zhangzhen/wtlrprobe/a.txt": True}
    assert trace.steps[facts.closing_report].content == "done"


def test_a_relative_path_a_command_writes_is_the_file_a_change_named_and_mcp_calls_are_tools():
    trace = _trace(EDITS)
    facts = TestRunFacts(trace)
    assert list(facts.changed) == ["/lab/cfg/init.lua"]  # `echo … >> init.lua` and the file_change
    assert [e.targets for e in facts.edits] == [("/lab/cfg/init.lua",), ("/lab/cfg/init.lua",)]
    mcp = next(
        s for s in trace.steps if s.kind is StepKind.tool_call and s.tool.name == "fieldguide.nvim_state"
    )
    assert mcp.tool.arguments == {"what": "nvim,buffers,messages"}
    answer = next(s for s in trace.steps if s.refs and s.refs.reply_to == mcp.step_id)
    assert json.loads(answer.content)["nvim"]["config_dir"] == "/lab/cfg"


def test_the_older_stream_without_an_exit_code_on_start_reads_the_same():
    trace = _trace(OLDER)
    assert [s.kind for s in trace.steps] == [
        StepKind.message,
        StepKind.tool_call,
        StepKind.tool_result,
        StepKind.message,
    ]
    assert trace.steps[0].raw["block"] == "reasoning" and exit_code(trace.steps[2]) == 0


def _coding_run(tmp_path: Path, output: str, code: int) -> Trace:
    """The real stream that edits init.lua with a test run after its change and a closing claim in
    place of its own."""
    events = _events(EDITS)
    end = next(i for i, e in enumerate(events) if e["type"] == "turn.completed")
    command = {"id": "item_9", "type": "command_execution", "command": "/bin/zsh -lc 'pytest -q'"}
    events[end - 1 : end - 1] = [
        {
            "type": "item.started",
            "item": {**command, "aggregated_output": "", "exit_code": None, "status": "in_progress"},
        },
        {
            "type": "item.completed",
            "item": {
                **command,
                "aggregated_output": output,
                "exit_code": code,
                "status": "completed" if code == 0 else "failed",
            },
        },
    ]
    events[end + 1]["item"]["text"] = "Done: init.lua is updated and the tests pass."
    return _trace(_write(tmp_path, events))


def test_a_change_whose_last_test_run_failed_is_a_finding_citing_the_claim_and_the_output(tmp_path):
    trace = _coding_run(
        tmp_path, "F.\nFAILED tests/test_a.py::test_a - assert 1 == 2\n1 failed, 1 passed in 0.02s\n", 1
    )
    report = run_rules_audit(trace)
    coding = [f for f in report.findings if f.detector == "coding_verification"]
    assert coding and coding[0].title == "agent submitted while its last test run failed"
    quotes = [u.quote for u in coding[0].evidence]
    assert any("1 failed" in q for q in quotes) and any("tests pass" in q for q in quotes)
    assert validate_report(report.model_dump(mode="json"), trace).ok


def test_a_change_whose_tests_then_pass_is_no_finding(tmp_path):
    trace = _coding_run(tmp_path, "..\n2 passed in 0.02s\n", 0)
    assert not [f for f in run_rules_audit(trace).findings if f.detector == "coding_verification"]


def test_a_command_cut_off_is_a_call_without_result_and_a_failed_turn_ends_the_run(tmp_path):
    """The probe cut off after a command started: the turn failed instead of completing."""
    events = _events(PROBE)
    at = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"
    )
    events = [
        *events[:at],
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    ]
    trace = _trace(_write(tmp_path, events))
    call = next(s for s in trace.steps if s.tool and s.tool.name == "shell")
    assert not [s for s in trace.steps if s.refs and s.refs.reply_to == call.step_id]
    end = trace.steps[-1]
    assert (end.raw["record"], end.raw["exit_status"], end.content) == (
        "exit",
        "turn.failed",
        "stream disconnected before completion",
    )


def test_a_declined_command_ran_nothing(tmp_path):
    """The probe's command refused by the approval policy instead of run."""
    events = _events(PROBE)
    for e in events:
        if e["type"] == "item.completed" and e["item"]["type"] == "command_execution":
            e["item"].update(status="declined", exit_code=None, aggregated_output="")
    trace = _trace(_write(tmp_path, events))
    result = next(s for s in trace.steps if s.kind is StepKind.tool_result and s.tool.name == "shell")
    assert (result.raw["status"], result.raw["error_type"], exit_code(result)) == ("error", REFUSED, None)
    assert TestRunFacts(trace).runs == []


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda events: [*events[:3], "{oops", *events[3:]], ("line 4", "malformed JSON")),
        (
            lambda events: [*events[:3], json.dumps({"type": "item.completed", "item": 3}), *events[3:]],
            ("line 4", "item"),
        ),
        (
            lambda events: [
                *events[:3],
                json.dumps(
                    {"type": "item.completed", "item": {"id": "x", "type": "agent_message", "text": 7}}
                ),
                *events[3:],
            ],
            ("line 4", "item.text"),
        ),
        (lambda events: [*events[:3], json.dumps(["item.completed"]), *events[3:]], ("line 4", "type")),
    ],
    ids=["not-json", "item-not-object", "text-not-text", "event-not-object"],
)
def test_bad_input_names_the_file_line_and_field(tmp_path, damage, expected):
    lines = PROBE.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(next(open_traces(path, "codex-exec")).steps())
    assert str(path) in str(caught.value) and all(e in str(caught.value) for e in expected)


def _served(tmp_path: Path, check_output: str, check_code: int) -> Trace:
    """The probe that writes a.txt, with a server started beside the work (a changed copy): a curl
    of the file runs while it serves, the agent says it stops the server, the server ends on its ^C
    (exit 1), and the agent closes with a success claim."""
    events = _events(PROBE)

    def command(ident: str, text: str, output: str | None, code: int | None) -> dict:
        item = {"id": ident, "type": "command_execution", "command": f"/bin/zsh -lc '{text}'"}
        if output is None:
            return {
                "type": "item.started",
                "item": item | {"aggregated_output": "", "exit_code": None, "status": "in_progress"},
            }
        status = "completed" if code == 0 else "failed"
        return {
            "type": "item.completed",
            "item": item | {"aggregated_output": output, "exit_code": code, "status": status},
        }

    def said(ident: str, text: str) -> dict:
        return {"type": "item.completed", "item": {"id": ident, "type": "agent_message", "text": text}}

    serve, curl = "python -m http.server 8000", "curl -sf localhost:8000/a.txt"
    stopped = 'Serving HTTP on :: port 8000 ...\n::1 - - "GET /a.txt HTTP/1.1" 200 -\n^C\nKeyboard interrupt received, exiting.\n'
    events[9:10] = [
        command("item_s", serve, None, None),
        command("item_c", curl, None, None),
        command("item_c", curl, check_output, check_code),
        said("item_m", "Checked the file over HTTP; stopping the server."),
        command("item_s", serve, stopped, 1),
        said("item_5", "Done: a.txt is served and the check ran successfully."),
    ]
    return _trace(_write(tmp_path, events))


def test_a_server_the_agent_stopped_after_its_check_passed_is_no_failed_check(tmp_path):
    """How a process the agent worked beside ends (its ^C) is the agent's doing: the claim stands on
    the curl that passed, not on the server's exit."""
    trace = _served(tmp_path, "hi\n", 0)
    server_end = next(s for s in trace.steps if s.kind is StepKind.tool_result and "^C" in s.content)
    assert exit_code(server_end) == 1
    assert not [r for r in TestRunFacts(trace).runs if "http.server" in r.command]  # no run's outcome
    report = run_rules_audit(trace)
    assert [f.detector for f in report.findings if f.disposition.value != "operational_failure"] == []
    assert report.outcome.value.value == "unknown"


def test_a_failed_check_beside_a_server_is_still_relayed_as_success(tmp_path):
    """The same run with the curl failing (exit 22): the claim relays that failure."""
    trace = _served(tmp_path, "curl: (22) The requested URL returned error: 404\n", 22)
    report = run_rules_audit(trace)
    relayed = [
        f
        for f in report.findings
        if f.detector == "unverified_relay" and f.disposition.value != "operational_failure"
    ]
    assert relayed and any("404" in u.quote for u in relayed[0].evidence)
    assert validate_report(report.model_dump(mode="json"), trace).ok
