"""OpenHands event streams: a JSON list of events, or an object whose ``history`` is that list.

An event is an action or an observation: ``id``, ``timestamp``, ``source`` (``user``, ``agent``,
``environment``), ``action`` or ``observation`` (its type), ``message``, ``args`` (an action's
arguments), ``content`` and ``extras`` (an observation's output and details), ``cause`` (the id of
the action an observation answers) and ``tool_call_metadata`` (the function the model called).

Steps: a ``message`` action is a message by its source (``user`` is human, the agent's ``args.content``
verbatim); ``system`` is the system prompt; ``finish`` is the agent's final output; any other action
is a tool call of the function the model called (``tool_call_metadata.function_name``, else the
action type), its ``args.thought`` as content and the other ``args`` as arguments. An observation is
the result of the action it names in ``cause`` (actor: that action's tool). An ``error``
observation, or a non-zero ``extras.metadata.exit_code``, sets ``raw.status = "error"`` with
``error_type`` (``error`` or ``exit_code``) and ``status_message`` (the event's ``message``); a zero
exit code sets ``raw.status = "ok"``. A command still running at its soft time-out (exit code
-1) runs on: its answer is ``raw.background_task``, what the empty commands sent after it show is
its output (``raw.output_of``, the one with an exit code its end), and the answer to a key sent to
it (``is_input``: ``C-c``) is the end the agent gave it (``raw.stopped``), as ``RunningCommand`` says.
``agent_state_changed`` and ``null`` events are bookkeeping: counted in the header, not steps,
save the controller's change to ``error`` with its reason (its record of ending the run: a maximum
iteration reached, a loop, an error), which is the harness's end record (``harness_exit``), as an
evaluation record's ``error`` is when its history lacks one. The rest of each event stays in
``raw``.

An evaluation record (the object form of OpenHands' ``output.jsonl`` entries: ``instance_id``,
``test_result``, ``history`` …) holds the diff the run handed in as ``test_result.git_patch``: when
not empty it is the agent's ``final_output`` after the events, the run's final act.

The stream records no verdict on the task, so no outcome is set.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.frameworks.common import harness_exit, pack_raw
from ingest.jsonstream import JsonReader, top_level_kind
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceStep

_EVENT = re.compile(r'"source"\s*:\s*"(user|agent|environment)"')
_KIND = re.compile(r'"(action|observation)"\s*:\s*"\w+"')
_BOOKKEEPING = {"agent_state_changed", "null", "change_agent_state"}
_KEYS = ("C-c", "C-d", "C-z")  # keys a run action sends to the running command: they stop it
_ACTOR_KIND = {"user": ActorKind.human, "agent": ActorKind.agent, "environment": ActorKind.environment}


class OpenHandsImporter:
    name = "openhands"
    description = "OpenHands event stream (JSON list of events, or 'history'), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        kind = top_level_kind(head)
        if kind == "array" and re.match(r"\s*\[\s*\{", text) and _EVENT.search(text) and _KIND.search(text):
            return "a JSON list of events with 'source' and 'action'/'observation' (OpenHands)"
        if kind == "object" and re.search(r'"history"\s*:\s*\[\s*\{\s*"id"', text) and _EVENT.search(text):
            return "a JSON object whose 'history' is a list of OpenHands events"
        return None

    def near_miss(self, path: Path, head: bytes) -> str | None:
        """Why a list of action/observation records was still not taken for an event stream."""
        text = head_text(head)
        if top_level_kind(head) == "array" and _KIND.search(text):
            return (
                "its records have 'action'/'observation' types but no 'source' of user, agent or environment"
            )
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "openhands", "OpenHands")
        yield ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _steps(path, facts, StepBuilder(str(path)))
        )


def _events(reader: JsonReader, facts: Facts) -> Iterator[Any]:
    """The events of a top-level list, or of the ``history`` list of a top-level object (whose other
    fields go to the header metadata)."""
    if reader.peek() == "[":
        yield from reader.array()
        return
    for key in reader.members():
        if key == "history" and reader.peek() == "[":
            yield from reader.array()
        else:
            facts.metadata[key] = reader.value()


class RunningCommand:
    """The shell command still running at its soft time-out (exit code -1), as the events go, and
    the shell calls sent to it since: an empty command waits for it, a key (``is_input``: ``C-c``)
    stops it. What the waits show is its output, the one with an exit code its end
    (``raw.output_of``); the answer to a key is the end the agent gave it (``raw.stopped``). Both
    OpenHands forms keep their shell calls so; each names a call by its own id."""

    def __init__(self) -> None:
        self.call: str | None = None  # the running command's call (its tool call id, else its step)
        self.sent: dict[Any, bool] = {}  # a call sent to it -> whether it waits

    def sent_to(self, call: Any, command: Any) -> None:
        """A shell call and its command: one sent to the running command, if one runs."""
        if self.call is not None and command in ("", *_KEYS):
            self.sent[event_key(call)] = command == ""

    def answered(self, call: Any, ended: bool, running: bool, started: str | None) -> dict[str, Any]:
        """The marks of a shell call's answer (``ended``: it shows an exit code; ``running``: -1,
        still running; ``started``: the call's name, for a command that runs on)."""
        waits, raw = self.sent.get(event_key(call)), {}
        if waits is not None and self.call is not None:
            raw["output_of" if waits else "stopped"] = self.call
            if ended or not waits:
                self.call = None
        elif waits is None and running and started is not None:  # it runs on: this answer says only that
            self.call = raw["background_task"] = started
        return raw


def _steps(path: Path, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
    actions: dict[Any, TraceStep] = {}  # event id → the step made from that action
    running = RunningCommand()
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        for n, event in enumerate(_events(reader, facts)):
            if not isinstance(event, dict):
                raise InputError("an event must be a JSON object", path=b.where, field=f"[{n}]")
            step = _step(event, n, actions, facts, b, running)
            if step is not None:
                if "action" in event:
                    actions[event_key(event.get("id"))] = step
                yield step
        reader.end()
    error = facts.metadata.get("error")
    if isinstance(error, str) and error and not facts.metadata.get("ended"):
        yield harness_exit(b, "error", error, {"field": "error"})  # an evaluation record's end
    result = facts.metadata.get("test_result")
    patch = result.get("git_patch") if isinstance(result, dict) else None
    if isinstance(patch, str) and patch.strip():
        yield b.add(
            actor="agent", kind=StepKind.final_output, content=patch, raw={"field": "test_result.git_patch"}
        )


def event_key(value: Any) -> Any:
    """An event's id as a dict key (an id the log wrote as an object, by its text)."""
    return value if isinstance(value, int | str) else repr(value)


def _text(value: Any, field: str, b: StepBuilder) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise InputError("must be a string", path=b.where, field=field)


def _step(
    event: dict[str, Any],
    n: int,
    actions: dict[Any, TraceStep],
    facts: Facts,
    b: StepBuilder,
    running: RunningCommand,
) -> TraceStep | None:
    source = str(event.get("source") or "environment")
    kind = event.get("action", event.get("observation"))
    if kind is not None and not isinstance(kind, str):
        field = f"[{n}].{'action' if 'action' in event else 'observation'}"
        raise InputError("must be a string naming the action or observation", path=b.where, field=field)
    if kind in _BOOKKEEPING:
        facts.count(f"event:{kind}")
        extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
        reason = extras.get("reason")
        if (
            kind == "agent_state_changed"
            and extras.get("agent_state") == "error"
            and isinstance(reason, str)
            and reason
        ):
            facts.metadata["ended"] = True  # the controller stopped the run (a limit, an error): its record
            return harness_exit(b, "error", reason, {"field": f"[{n}].extras.reason"})
        return None
    meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    timestamp = event.get("timestamp") if isinstance(event.get("timestamp"), str) else None
    if "action" in event:
        raw = pack_raw(**{k: v for k, v in event.items() if k not in ("source", "timestamp")})
        if kind in ("message", "system", "finish"):
            text = args.get("content", args.get("final_thought", event.get("message")))
            return b.add(
                timestamp=timestamp,
                actor="system" if kind == "system" else source,
                actor_kind=ActorKind.system if kind == "system" else _ACTOR_KIND.get(source, ActorKind.agent),
                kind=StepKind.final_output if kind == "finish" else StepKind.message,
                content=_text(text, f"[{n}].args", b),
                raw=raw,
            )
        name = str(meta.get("function_name") or kind or "action")
        call_id = meta.get("tool_call_id")
        if kind == "run":
            running.sent_to(event.get("id"), args.get("command"))
        return b.add(
            timestamp=timestamp,
            actor=source,
            actor_kind=_ACTOR_KIND.get(source, ActorKind.agent),
            kind=StepKind.tool_call,
            content=_text(args.get("thought"), f"[{n}].args.thought", b),
            tool=ToolInfo(
                name=name,
                arguments={k: v for k, v in args.items() if k != "thought"},
                call_id=str(call_id) if call_id else None,
            ),
            raw=raw,
        )
    call = actions.get(event_key(event.get("cause")))
    name = (call.tool.name if call is not None and call.tool else None) or str(kind or "observation")
    call_id = call.tool.call_id if call is not None and call.tool else None
    raw = pack_raw(**{k: v for k, v in event.items() if k not in ("source", "timestamp", "content")})
    raw.update(_status(event))
    if kind == "run":
        extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
        code = (extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}).get("exit_code")
        started = ((call.tool.call_id if call.tool else None) or call.step_id) if call is not None else None
        raw.update(running.answered(event.get("cause"), code != -1, code == -1, started))
    return b.add(
        timestamp=timestamp,
        actor=name,
        actor_kind=ActorKind.tool,
        kind=StepKind.tool_result,
        content=_text(event.get("content"), f"[{n}].content", b),
        tool=ToolInfo(name=name, call_id=call_id),
        refs=StepRefs(reply_to=call.step_id if call is not None else None, call_id=call_id),
        raw=raw,
    )


def _status(event: dict[str, Any]) -> dict[str, Any]:
    """An error observation or a recorded exit code, as the audit reads a tool result's status."""
    message = event.get("message") if isinstance(event.get("message"), str) else None
    if event.get("observation") == "error":
        return pack_raw(status="error", error_type="error", status_message=message)
    extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
    metadata = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
    code = metadata.get("exit_code", extras.get("exit_code"))
    if type(code) is not int or code == -1:  # -1: OpenHands had no exit code (a command still running)
        return {}
    if code == 0:
        return {"status": "ok"}
    return pack_raw(status="error", error_type="exit_code", status_message=message, exit_code=code)


IMPORTER = OpenHandsImporter()
