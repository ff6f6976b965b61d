"""SWE-agent trajectories (``.traj``): one trace per file.

A ``.traj`` is a JSON object: ``trajectory`` (the agent's turns: ``thought``, ``action``,
``observation``, ``response``, ``state`` …), ``history`` (the chat the model saw: ``role``,
``content``, ``agent``, ``message_type``, ``tool_calls`` …) and ``info`` (``exit_status``,
``submission``, ``model_stats`` …). Demonstration files carry ``history`` alone.

Steps: the history's opening messages (before the agent's first turn) come first: the system prompt
(actor ``system``) and the task the framework hands the agent (role ``user``: human, per the
conventions); demonstration messages (``is_demo``) are in-context examples, not acts, and are
counted in the header. Then each turn: the agent's ``thought`` as a tool call of the command it ran
(the function name where the model called a function, else the action's first word, with the
action line verbatim as arguments), and its ``observation`` as the result of that command. Without
a ``trajectory``, the rest of the history gives the same steps (assistant messages, then the
observations that answer them).

``info`` (``exit_status`` included) is kept in ``header.metadata``, and ``info.submission`` (the
diff the run handed in, when not empty) is the agent's ``final_output``, the run's final act; a
run the harness ended (an ``exit_status`` other than ``submitted``: ``exit_cost``,
``submitted (exit_context)`` …) has the harness's record of it before (``harness_exit``), and a
run submitted with an empty diff ends on that record, marked ``raw.empty_submission``. SWE-agent
records no verdict on the submission, so no outcome is set; a failed command is not marked either,
since the trajectory records no exit code or error flag.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.json_text import json_value
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.frameworks.common import empty_submission, harness_exit, pack_raw
from ingest.jsonstream import JsonReader, top_level_kind
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceStep

_TURN = re.compile(r'"trajectory"\s*:\s*\[\s*\{')
_MESSAGE_TYPE = re.compile(r'"message_type"\s*:\s*"(system_prompt|observation|action|thought)"')


class SweAgentImporter:
    name = "swe-agent"
    description = "SWE-agent trajectory (.traj), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if top_level_kind(head) != "object":
            return None
        if _TURN.search(text) and '"action"' in text and '"observation"' in text:
            return "a JSON object whose 'trajectory' holds action/observation turns (SWE-agent)"
        if '"history"' in text and _MESSAGE_TYPE.search(text):
            return "a JSON object whose 'history' messages carry SWE-agent message types"
        return None

    def near_miss(self, path: Path, head: bytes) -> str | None:
        """Why a JSON object with SWE-agent's keys was still not taken for a trajectory."""
        text = head_text(head)
        if top_level_kind(head) == "object" and ('"trajectory"' in text or '"history"' in text):
            return (
                "it has a 'trajectory' or 'history' key, but no action/observation turns or "
                "SWE-agent message types in its first 64 KiB"
            )
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        fields = _top_fields(path)
        info = fields.get("info") if isinstance(fields.get("info"), dict) else {}
        header = file_header(
            path,
            "swe-agent",
            "SWE-agent",
            environment=fields.get("environment"),
            info=info,
            exit_status=info.get("exit_status"),
        )
        yield ImportedTrace(
            importer=self.name,
            header=header,
            steps=lambda facts: _steps(path, facts, info, StepBuilder(str(path))),
        )


def _top_fields(path: Path) -> dict[str, Any]:
    """The small top-level values (``environment``, ``info``); the big lists are walked, not kept."""
    fields: dict[str, Any] = {}
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        for key in reader.members():
            if key in ("environment", "info"):
                fields[key] = reader.value()
        reader.end()
    return fields


def _steps(path: Path, facts: Facts, info: dict[str, Any], b: StepBuilder) -> Iterator[TraceStep]:
    """Opening history messages, then the turns (from ``trajectory``, else from the history), then
    how the run ended: the harness's record when it ended the run (``exit_cost``, ``exit_context``,
    ``exit_error``, also when it then submitted what there was: ``submitted (exit_cost)``), and
    the submission."""
    turns = 0
    agent = "agent"
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        for key in reader.members():
            if key == "history" and reader.peek() == "[":
                opening = True
                for n, message in enumerate(reader.array()):
                    message = _object(message, f"history[{n}]", b)
                    if opening and message.get("role") == "assistant":
                        opening, agent = False, str(message.get("agent") or agent)
                    if opening:
                        yield from _opening(message, n, facts, b)
            elif key == "trajectory" and reader.peek() == "[":
                turns = sum(1 for _ in reader.elements())
        reader.end()
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        for key in reader.members():
            if key == "trajectory" and turns:
                for n, turn in enumerate(reader.array()):
                    yield from _turn(_object(turn, f"trajectory[{n}]", b), agent, b)
            elif key == "history" and not turns and reader.peek() == "[":
                yield from _history_turns(reader, agent, b)
        reader.end()
    status, submission = info.get("exit_status"), info.get("submission")
    if isinstance(status, str) and status and status != "submitted":
        yield harness_exit(b, status, raw={"field": "info.exit_status"})
    if isinstance(submission, str) and submission.strip():
        yield b.add(
            actor=agent, kind=StepKind.final_output, content=submission, raw={"field": "info.submission"}
        )
    elif status == "submitted" and isinstance(submission, str):  # an empty diff handed in
        yield empty_submission(b, status, raw={"field": "info.submission"})


def _object(value: Any, where: str, b: StepBuilder) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError("must be a JSON object", path=b.where, field=where)
    return value


def _text(value: Any, where: str, b: StepBuilder) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        return "\n".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    raise InputError("must be a string or a list of text parts", path=b.where, field=where)


def _opening(message: dict[str, Any], n: int, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
    """The system prompt and the task message; demonstrations are counted, not stepped."""
    if message.get("is_demo") or message.get("message_type") == "demonstration":
        facts.count("history:demonstration")
        return
    role = str(message.get("role") or "user")
    content = _text(message.get("content"), f"history[{n}].content", b)
    if role == "user" and facts.task is None:
        facts.task = content
    yield b.add(
        actor=role,
        actor_kind=ActorKind.system if role == "system" else ActorKind.human,
        content=content,
        raw=pack_raw(**{k: v for k, v in message.items() if k not in ("role", "content")}),
    )


def _tool(action: str, tool_calls: Any) -> ToolInfo | None:
    """The command a turn ran: the function the model called, else the action's first word."""
    call = tool_calls[0] if isinstance(tool_calls, list) and tool_calls else None
    function = call.get("function") if isinstance(call, dict) else None
    if isinstance(function, dict) and function.get("name"):
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            arguments = json_value(arguments, default=arguments)
        return ToolInfo(
            name=str(function["name"]),
            arguments=arguments if isinstance(arguments, dict | str) else None,
            call_id=str(call["id"]) if call.get("id") else None,
        )
    words = action.split(maxsplit=1)
    return ToolInfo(name=words[0], arguments=action) if words else None


def _call(
    thought: str, action: str, tool_calls: Any, agent: str, raw: dict[str, Any], b: StepBuilder
) -> TraceStep:
    tool = _tool(action, tool_calls)
    return b.add(
        actor=agent,
        kind=StepKind.tool_call if tool else StepKind.message,
        content=thought,
        tool=tool,
        raw=raw,
    )


def _result(call: TraceStep, content: str, raw: dict[str, Any], b: StepBuilder) -> TraceStep:
    """What the command returned, answering the agent's call."""
    name, call_id = (call.tool.name, call.tool.call_id) if call.tool else ("environment", None)
    return b.add(
        actor=name,
        actor_kind=ActorKind.tool,
        kind=StepKind.tool_result,
        content=content,
        tool=ToolInfo(name=name, call_id=call_id),
        refs=StepRefs(reply_to=call.step_id, call_id=call_id),
        raw=raw,
    )


def _turn(turn: dict[str, Any], agent: str, b: StepBuilder) -> Iterator[TraceStep]:
    """One trajectory entry: the agent's thought and command, then what the command returned."""
    thought = _text(turn.get("thought"), "thought", b)
    action = _text(turn.get("action"), "action", b)
    raw = pack_raw(**{k: v for k, v in turn.items() if k not in ("thought", "observation")})
    call = _call(thought, action, turn.get("tool_calls"), agent, raw, b)
    yield call
    if "observation" in turn and call.kind == StepKind.tool_call:
        yield _result(call, _text(turn.get("observation"), "observation", b), {}, b)


def _history_turns(reader: JsonReader, agent: str, b: StepBuilder) -> Iterator[TraceStep]:
    """The history after the opening: assistant turns, and the observations that answer them."""
    started = False
    call: TraceStep | None = None
    for n, message in enumerate(reader.array()):
        message = _object(message, f"history[{n}]", b)
        role = message.get("role")
        if role == "assistant":
            started = True
            used = "thought" if "thought" in message else "content"
            call = _call(
                _text(message.get(used), f"history[{n}].{used}", b),
                _text(message.get("action"), f"history[{n}].action", b),
                message.get("tool_calls"),
                str(message.get("agent") or agent),
                pack_raw(**{k: v for k, v in message.items() if k not in ("role", used)}),
                b,
            )
            yield call
        elif started and not (message.get("is_demo") or message.get("message_type") == "demonstration"):
            content = _text(message.get("content"), f"history[{n}].content", b)
            raw = pack_raw(**{k: v for k, v in message.items() if k != "content"})
            if call is not None and call.kind == StepKind.tool_call:
                yield _result(call, content, raw, b)
                call = None
            else:
                yield b.add(
                    actor=str(role or "user"), actor_kind=ActorKind.environment, content=content, raw=raw
                )


IMPORTER = SweAgentImporter()
