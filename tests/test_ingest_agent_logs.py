"""SWE-agent trajectories, OpenHands event streams, and what detection says about a file it refuses.

Real files (tests/fixtures/real, see SOURCES.md). Step counts were verified by hand on the files:

- swe-agent/networking_1.traj: ``history`` opens with a system prompt and the challenge (2 steps
  before the first ``"role": "assistant"``), then ``trajectory`` holds 4 turns, each a thought with
  its command and an observation, and ``info.submission`` is the final act: 2 + 4 × 2 + 1 = 11 steps.
- swe-agent/function_calling_simple.traj: no ``trajectory``; ``history`` has 12 messages: system,
  user, then 5 ``assistant`` messages each answered by one ``tool`` message: 12 steps.
- openhands/basic_interactions.json: 6 events (3 user messages, 2 agent messages, 1 finish): 6 steps.
- openhands/wrong_initial_state.json: 8 events (the user's request, read / its observation, run /
  its observation, read / its observation, finish): 8 steps.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.audit.detectors.test_runs import TestRunFacts, worked_beside
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.validator import validate_report
from auditor.core.errors import InputError
from ingest import detect, open_traces
from schemas import Trace
from schemas.trace import ActorKind, StepKind
from tests.conftest import REPO

REAL = REPO / "tests" / "fixtures" / "real"
SWE = REAL / "swe-agent"
OH = REAL / "openhands"


def _only(path: Path):
    [trace] = list(open_traces(path))
    return trace, list(trace.steps())


@pytest.mark.parametrize(
    ("path", "importer"),
    [
        (SWE / "networking_1.traj", "swe-agent"),
        (SWE / "function_calling_simple.traj", "swe-agent"),
        (OH / "basic_interactions.json", "openhands"),
        (OH / "wrong_initial_state.json", "openhands"),
        (REAL / "inspect" / "log_formats.json", "inspect"),
        (REAL / "inspect" / "log_read_sample.json", "inspect"),
        (REAL / "inspect" / "log_tool_call_error.json", "inspect"),
    ],
)
def test_real_files_are_detected_as_their_format(path, importer):
    assert detect(path)[0] == importer


# -- SWE-agent -------------------------------------------------------------------------------


def test_swe_agent_turns_are_thought_with_command_then_observation():
    trace, steps = _only(SWE / "networking_1.traj")
    raw = json.loads((SWE / "networking_1.traj").read_text())
    assert len(steps) == 11
    assert [(s.actor, s.actor_kind, s.kind) for s in steps[:4]] == [
        ("system", ActorKind.system, StepKind.message),
        ("user", ActorKind.human, StepKind.message),
        ("primary", ActorKind.agent, StepKind.tool_call),
        ("tshark", ActorKind.tool, StepKind.tool_result),
    ]
    calls = [s for s in steps if s.kind == StepKind.tool_call]
    assert [c.content for c in calls] == [t["thought"] for t in raw["trajectory"]]
    assert [c.tool.arguments for c in calls] == [t["action"] for t in raw["trajectory"]]
    assert [c.tool.name for c in calls] == ["tshark", "tshark", "tshark", "submit"]
    results = [s for s in steps if s.kind == StepKind.tool_result]
    assert [r.content for r in results] == [t["observation"] for t in raw["trajectory"]]
    assert [r.refs.reply_to for r in results] == [c.step_id for c in calls]
    assert calls[0].raw["response"] == raw["trajectory"][0]["response"]  # unmapped fields stay in raw
    assert all(s.recipients is None for s in steps)
    assert trace.header.metadata["exit_status"] == "submitted"
    assert trace.header.metadata["info"]["submission"] == "flag{d316759c281bf925d600be698a4973d5}"
    final = steps[-1]  # what the run handed in is its final act
    assert (final.actor, final.kind, final.content) == (
        "primary",
        StepKind.final_output,
        raw["info"]["submission"],
    )
    assert trace.header.task.startswith("We're currently solving the following CTF challenge.")
    assert "outcome" not in trace.header.metadata  # SWE-agent records no verdict on a submission


def test_swe_agent_history_alone_gives_function_calls_and_their_results():
    trace, steps = _only(SWE / "function_calling_simple.traj")
    assert len(steps) == 12
    calls = [s for s in steps if s.kind == StepKind.tool_call]
    assert [(c.actor, c.tool.name) for c in calls] == [
        ("main", "find_file"),
        ("main", "open"),
        ("main", "edit"),
        ("main", "bash"),
        ("main", "submit"),
    ]
    assert calls[0].tool.arguments == {"file_name": "missing_colon.py"}  # the function's JSON arguments
    assert calls[0].tool.call_id == "call_PbWErNIge3YTrli3fiVvmIid"
    assert calls[0].raw["action"] == "find_file missing_colon.py"
    for call, result in zip(calls, [s for s in steps if s.kind == StepKind.tool_result], strict=True):
        assert (result.refs.reply_to, result.refs.call_id, result.actor) == (
            call.step_id,
            call.tool.call_id,
            call.tool.name,
        )
    assert steps[-1].content.startswith("\r\ndiff --git a/tests/missing_colon.py")
    assert "exit_status" not in trace.header.metadata  # a demonstration has no info


def test_swe_agent_demonstrations_are_counted_not_stepped(tmp_path):
    raw = json.loads((SWE / "networking_1.traj").read_text())
    demo = {**raw["history"][1], "content": "Here is a demonstration …", "is_demo": True}
    raw["history"].insert(1, demo)
    path = tmp_path / "with_demo.traj"
    path.write_text(json.dumps(raw))
    trace, steps = _only(path)
    assert len(steps) == 11 and "demonstration" not in steps[1].content
    assert trace.header.metadata["skipped_records"] == {"history:demonstration": 1}


# -- OpenHands -------------------------------------------------------------------------------


def test_openhands_user_and_agent_messages():
    _, steps = _only(OH / "basic_interactions.json")
    assert [(s.actor, s.actor_kind, s.kind) for s in steps] == [
        ("user", ActorKind.human, StepKind.message),
        ("agent", ActorKind.agent, StepKind.message),
        ("user", ActorKind.human, StepKind.message),
        ("agent", ActorKind.agent, StepKind.message),
        ("user", ActorKind.human, StepKind.message),
        ("agent", ActorKind.agent, StepKind.final_output),
    ]
    assert steps[0].content == "what's 1+1?" and steps[0].timestamp == "2025-02-01T00:14:10.787622"
    assert steps[-1].content == "All done! What's next on the agenda?"
    assert steps[-1].raw["tool_call_metadata"]["function_name"] == "finish"
    assert all(s.recipients is None for s in steps)


def test_openhands_actions_are_tool_calls_answered_by_their_observations():
    _, steps = _only(OH / "wrong_initial_state.json")
    assert [(s.actor, s.kind) for s in steps] == [
        ("user", StepKind.message),
        ("agent", StepKind.tool_call),
        ("str_replace_editor", StepKind.tool_result),
        ("agent", StepKind.tool_call),
        ("execute_bash", StepKind.tool_result),
        ("agent", StepKind.tool_call),
        ("str_replace_editor", StepKind.tool_result),
        ("agent", StepKind.final_output),
    ]
    run, ran = steps[3], steps[4]
    assert run.content == "Great, I found the file. Now I'll use the bash command `mv` to rename it."
    assert run.tool.arguments["command"] == "mv /workspace/game_2048.py /workspace/2048.py"
    assert "thought" not in run.tool.arguments
    assert (ran.refs.reply_to, ran.refs.call_id) == (run.step_id, "toolu_01PuY3mXrE6fm3j52GscR4rj")
    assert ran.raw["status"] == "ok"  # exit code 0, as the event records it
    assert "status" not in steps[2].raw  # a file view records no status


def _events_with(tmp_path: Path, change) -> list:
    events = json.loads((OH / "wrong_initial_state.json").read_text())
    change(events)
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    return list(next(iter(open_traces(path))).steps())


def test_openhands_failed_commands_and_error_observations_are_errors(tmp_path):
    def exit_1(events: list[dict[str, Any]]) -> None:
        events[4]["extras"]["metadata"]["exit_code"] = 1
        events[4]["message"] = (
            "Command `mv /workspace/game_2048.py /workspace/2048.py` executed with exit code 1."
        )

    ran = _events_with(tmp_path, exit_1)[4]
    assert (ran.raw["status"], ran.raw["error_type"], ran.raw["exit_code"]) == ("error", "exit_code", 1)
    assert ran.raw["status_message"].endswith("executed with exit code 1.")

    def error(events: list[dict[str, Any]]) -> None:
        events[2].update(observation="error", content="File not found: /workspace", message="File not found")

    viewed = _events_with(tmp_path, error)[2]
    assert (viewed.raw["status"], viewed.raw["error_type"], viewed.raw["status_message"]) == (
        "error",
        "error",
        "File not found",
    )
    assert viewed.refs.reply_to == "s1" and viewed.content == "File not found: /workspace"


def _waited(events: list[dict[str, Any]], then: str, output: str, code: int) -> list[dict[str, Any]]:
    """The real run action (``mv``) as a ``pytest -q`` still running at its soft time-out (exit code
    -1, its output's first half), then a run action sending ``then`` to it (``""`` waits; ``C-c``,
    ``is_input``, stops it) answered with the rest and exit code ``code``, in the events' own shapes."""
    lines = output.split("\n")
    first, rest = "\n".join(lines[: len(lines) // 2]), "\n".join(lines[len(lines) // 2 :])
    run, ran = json.loads(json.dumps(events[3])), json.loads(json.dumps(events[4]))
    run["args"]["command"] = ran["extras"]["command"] = "pytest -q"
    ran["content"], ran["extras"]["metadata"]["exit_code"] = first, -1
    ran["extras"]["metadata"]["suffix"] = "\n[The command has no new output after 30 seconds.]"
    sent = json.loads(json.dumps(run)) | {"id": 50}
    sent["args"] |= {"command": then, "is_input": then != ""}
    sent["tool_call_metadata"]["tool_call_id"] = "toolu_wait"
    shown = json.loads(json.dumps(ran)) | {"id": 51, "cause": 50, "content": rest}
    shown["extras"] |= {"command": then}
    shown["extras"]["metadata"] |= {
        "exit_code": code,
        "suffix": f"\n[The command completed with exit code {code}.]",
    }
    shown["tool_call_metadata"]["tool_call_id"] = "toolu_wait"
    finish = json.loads(json.dumps(events[7]))
    finish["args"]["thought"] = "Done: all the tests pass."
    return [*events[:3], run, ran, sent, shown, finish]


def test_openhands_a_command_running_past_its_time_out_ends_where_the_wait_shows_its_exit(tmp_path):
    """The -1 observation says only that it runs on; the empty command's observation with the exit
    code is its result, so the failing pytest run is the run. Stopped with ``C-c``: no command, and
    its answer the end the agent gave it, no run."""
    events = json.loads((OH / "wrong_initial_state.json").read_text())
    failed = (REAL / "test-runs" / "pytest_failed.txt").read_text(encoding="utf-8")
    path = tmp_path / "events.json"
    path.write_text(json.dumps(_waited(events, "", failed, 1)))
    imported, steps = _only(path)
    trace = Trace(header=imported.header, steps=steps)
    started = next(s for s in steps if s.raw.get("background_task"))
    shown = next(s for s in steps if s.raw.get("output_of"))
    assert started.raw["background_task"] == shown.raw["output_of"] == "toolu_01PuY3mXrE6fm3j52GscR4rj"
    (run,) = TestRunFacts(trace).runs
    assert (run.command, steps[run.result], run.failed, run.exit) == ("pytest -q", shown, 1, 1)
    assert validate_report(run_rules_audit(trace).model_dump(mode="json"), trace).ok
    path.write_text(json.dumps(_waited(events, "C-c", "^C", 130)))
    imported, steps = _only(path)
    assert not TestRunFacts(Trace(header=imported.header, steps=steps)).runs
    (answer,) = [p for p, s in enumerate(steps) if s.raw.get("stopped")]
    assert answer in worked_beside(steps) and not [s for s in steps if s.raw.get("output_of")]


def test_openhands_history_object_and_bookkeeping_events(tmp_path):
    events = json.loads((OH / "basic_interactions.json").read_text())
    state = {"id": 1, "source": "environment", "observation": "agent_state_changed", "content": "",
             "extras": {"agent_state": "running"}}  # fmt: skip
    path = tmp_path / "output.json"
    path.write_text(json.dumps({"instance_id": "demo-1", "history": [events[0], state, *events[1:]]}))
    assert detect(path)[0] == "openhands"
    trace, steps = _only(path)
    assert len(steps) == 6
    assert trace.header.metadata["instance_id"] == "demo-1"
    assert trace.header.metadata["skipped_records"] == {"event:agent_state_changed": 1}


# -- what detection says about a file it refuses --------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "seen", "closest"),
    [
        ("a.json", b'{"episode": 3, "reward": 1}', "a JSON object with keys episode, reward",
         "no importer came close"),
        ("b.json", b'{"trajectory": [{"thought": "x"}], "info": {}}', "a JSON object with keys trajectory, info",
         "closest: swe-agent, which declined it because it has a 'trajectory' or 'history' key"),
        ("c.json", b'[{"action": "run", "args": {}}]', "a JSON list whose first element is an object with keys action, args",
         "closest: openhands"),
        ("d.data", b'[1, 2]\n[3, 4]\n', "JSONL whose first line is a list", "no importer came close"),
        ("e.log", b"\n  Hello there, agents\nsecond line\n", "text starting with 'Hello there, agents'",
         "no importer came close"),
        ("f.zip", b"", "a zip archive", "closest: inspect, which declined it because it is a zip archive"),
        ("g.json", b'{"eval": {"task": "x"}, "status": "started"}', "a JSON object with keys eval, status",
         "closest: inspect"),
    ],
)  # fmt: skip
def test_an_unrecognised_file_says_what_it_holds_and_what_came_closest(tmp_path, name, data, seen, closest):
    path = tmp_path / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("notes.txt", "hello")
    else:
        path.write_bytes(data)
    with pytest.raises(InputError) as info:
        detect(path)
    message = info.value.one_line()
    assert f"no importer recognises this file: it holds {seen}" in message
    assert (
        closest in message
        and "name the importer with --input-format" in message
        and "--format" not in message
    )


def test_a_cut_json_head_still_names_its_keys(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"run": "r1", "notes": "x" * 200_000, "after": 1}))
    with pytest.raises(InputError, match=r"a JSON object with keys run, notes \(in its first 64 KiB\)"):
        detect(path)


# -- fuzzing the new parsers -----------------------------------------------------------------

KEYS = ["trajectory", "history", "info", "environment", "thought", "action", "observation", "response",
        "role", "content", "agent", "message_type", "is_demo", "tool_calls", "function", "name", "arguments",
        "id", "source", "args", "extras", "metadata", "exit_code", "cause", "tool_call_metadata",
        "function_name", "tool_call_id", "message", "timestamp"]  # fmt: skip
VALUES = ["", "x", "user", "agent", "assistant", "system", "run", "message", "finish", "error", "ls -a",
          "agent_state_changed", "environment", "system_prompt"]  # fmt: skip
values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(VALUES),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=16,
)


@pytest.mark.parametrize("name", ["swe-agent", "openhands"])
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(doc=values, cut=st.integers(0, 400))
def test_any_input_is_a_trace_or_a_clear_error(tmp_path, name, doc, cut):
    path = tmp_path / "input.json"
    data = json.dumps(doc).encode()
    path.write_bytes(data if cut == 0 else data[:cut])
    try:
        for trace in open_traces(path, name):
            trace.scan()
            assert sum(1 for _ in trace.steps()) == trace.step_count
    except InputError as exc:
        assert str(path) in str(exc)


# -- mid-2023 ChatDev logs -------------------------------------------------------------------

CHATDEV = REAL / "chatdev"


def test_a_mid_2023_chatdev_log_is_detected_and_read():
    """chatdev/20230628184918.log (AgentTech, June 2023): three records, all ChatDev's own."""
    path = CHATDEV / "20230628184918.log"
    assert detect(path)[0] == "chatdev"
    _, steps = _only(path)
    assert [(s.actor, s.actor_kind, s.timestamp, s.content) for s in steps] == [
        ("ChatDev", ActorKind.system, "2023-06-28T18:49:18", "AgentTech Starts (20230628184918)"),
        ("ChatDev", ActorKind.system, "2023-06-28T18:49:18", "log_filename: 20230628184918.log"),
        ("ChatDev", ActorKind.system, "2023-06-28T18:49:33", "AgentTech Ends (20230628184933)"),
    ]


# Records quoted from OpenBMB/ChatDev @ b23416faabeca58217960903ca3861f04761422e,
# WareHouse/FlappyBird_THUNLP_20230726121145/20230726121145.log (July 2023); the SystemMessage
# bodies are cut short. The whole log (145 KB) is not committed: its stored text could not be
# copied here byte for byte, so only the real June 2023 log above is a fixture file.
FLAPPY = """\
[2023-26-07 12:11:45 INFO] ChatDev Starts (20230726121145)

[2023-26-07 12:11:45 INFO] PhaseType: PhaseType.DEMAND_ANALYSIS

[2023-26-07 12:11:45 INFO] AI Assistant (Chief Product Officer) sys message:
SystemMessage(role_name='Chief Product Officer', role_type=<RoleType.CHATDEV_CPO: 'chief product officer (CPO)'>)


[2023-26-07 12:11:45 INFO] AI User (Chief Executive Officer) sys message:
SystemMessage(role_name='Chief Executive Officer', role_type=<RoleType.CHATDEV_CEO: 'chief executive officer (CEO)'>)


[2023-26-07 12:11:45 INFO] Task prompt:
Design a basic Flappy Bird game.


[2023-26-07 12:11:46 INFO] [OpenAI_Usage_Info]
prompt_tokens: 445
completion_tokens: 14
total_tokens: 459


[2023-26-07 12:11:51 INFO] [0] AI Assistant (Chief Product Officer):

I suggest we design the Flappy Bird game as a mobile application.


[2023-26-07 12:11:51 INFO] [0] AI User (Chief Executive Officer):

I agree with your suggestion. Designing the Flappy Bird game as a mobile application would be a great choice.


[2023-26-07 12:11:52 INFO] [1] AI Assistant (Chief Product Officer):

<INFO> Mobile Application.

[2023-26-07 12:11:52 INFO] [1] AI Assistant (Chief Product Officer) terminated the chat.

[2023-26-07 12:11:52 INFO] PhaseType: PhaseType.CHOOSING_LANGUAGE

[2023-26-07 12:11:52 INFO] AI Assistant (Chief Technology Officer) sys message:
SystemMessage(role_name='Chief Technology Officer', role_type=<RoleType.CHATDEV_CTO: 'chief technology officer (CTO)'>)


[2023-26-07 12:11:52 INFO] AI User (Chief Executive Officer) sys message:
SystemMessage(role_name='Chief Executive Officer', role_type=<RoleType.CHATDEV_CEO: 'chief executive officer (CEO)'>)


[2023-26-07 12:11:54 INFO] [0] AI Assistant (Chief Executive Officer):

<INFO> Python..

[2023-26-07 12:11:54 INFO] [0] AI User (Chief Executive Officer) terminated the chat.
"""
FLAPPY_STEPS = [
    ("ChatDev", None, "ChatDev Starts (20230726121145)"),
    ("ChatDev", None, "PhaseType: PhaseType.DEMAND_ANALYSIS"),
    ("system", ["Chief Product Officer"], "SystemMessage(role_name='Chief Product Officer', "),
    ("system", ["Chief Executive Officer"], "SystemMessage(role_name='Chief Executive Officer', "),
    ("ChatDev", None, "Task prompt:\nDesign a basic Flappy Bird game."),
    ("Chief Product Officer", ["Chief Executive Officer"], "I suggest we design the Flappy Bird game"),
    ("Chief Executive Officer", ["Chief Product Officer"], "I agree with your suggestion."),
    ("Chief Product Officer", ["Chief Executive Officer"], "<INFO> Mobile Application."),
    ("ChatDev", None, "[1] AI Assistant (Chief Product Officer) terminated the chat."),
    ("ChatDev", None, "PhaseType: PhaseType.CHOOSING_LANGUAGE"),
    ("system", ["Chief Technology Officer"], "SystemMessage(role_name='Chief Technology Officer', "),
    ("system", ["Chief Executive Officer"], "SystemMessage(role_name='Chief Executive Officer', "),
    # the log names the CEO as the assistant side, which the CTO holds: no recipient is guessed
    ("Chief Executive Officer", None, "<INFO> Python.."),
    ("ChatDev", None, "[0] AI User (Chief Executive Officer) terminated the chat."),
]


def _colour(text: str, where: str) -> str:
    """The same records with ANSI colours on their header lines, as some mid-2023 runs wrote them."""
    lines = []
    for line in text.split("\n"):
        if line.startswith("[2023-"):
            stamp, _, rest = line.partition("] ")
            line = f"{stamp}] \x1b[33m{rest}\x1b[0m" if where == "role" else f"\x1b[32m{stamp}]\x1b[0m {rest}"
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize("colour", [None, "role", "stamp"])
def test_mid_2023_chatdev_roles_are_read_through_colour_codes(tmp_path, colour):
    path = tmp_path / "flappy.log"
    path.write_text(FLAPPY if colour is None else _colour(FLAPPY, colour))
    assert detect(path)[0] == "chatdev"
    for fmt in ("auto", "chatdev"):  # detected or forced with --format chatdev: the same steps
        [trace] = list(open_traces(path, fmt))
        steps = list(trace.steps())
        assert [(s.actor, s.recipients) for s in steps] == [(a, r) for a, r, _ in FLAPPY_STEPS]
        for step, (_, _, text) in zip(steps, FLAPPY_STEPS, strict=True):
            assert step.content.startswith(text)
        assert trace.header.task == "Design a basic Flappy Bird game."
        assert trace.header.metadata["skipped_records"] == {"openai_usage_info": 1}
    assert steps[5].raw == {"line": 23, "level": "INFO", "side": "assistant", "phase": "DEMAND_ANALYSIS",
                            "turn": 0, **({"ansi_stripped": True} if colour else {})}  # fmt: skip
    assert steps[2].actor_kind == ActorKind.system and steps[5].actor_kind == ActorKind.agent
    assert steps[5].timestamp == "2023-07-26T12:11:51"
