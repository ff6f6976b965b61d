"""The Codex CLI's headless event stream (``codex exec --json``; 0.4x ``--experimental-json``), as
CI jobs and wrappers save it: one trace per file, every JSON line one event ``{"type", …}``.

The steps are the thread's items, each where it happened:

- ``agent_message`` (0.4x ``assistant_message``): the agent's words (actor ``agent``);
  ``reasoning``: its reasoning summary, marked ``raw.block = "reasoning"``; ``plan``: its proposed
  plan; ``request_user_input``: each question it put to the principal (its ``todo_list``, as it
  last stood, goes to the header: a record of its plan, not an act);
- ``command_execution``: a ``shell`` call with its ``command`` (the harness's shell-quoted argv,
  ``bash -lc '…'``), placed where the command started, and its result when it finished: the
  ``aggregated_output`` verbatim, ``exit_code`` as ``raw.exit_code``, status ``ok`` for exit 0 and
  ``error`` otherwise; a command the approval policy refused (``declined``) ran nothing: an error
  whose ``error_type`` is ``refused``;
- ``file_change``: for each file it changed, a ``file_change`` call naming the file (its
  ``changes`` entry: the path, and whether it was added, updated or deleted; the stream holds no
  patch text), with its result ``completed`` or ``failed``;
- ``mcp_tool_call`` (an ``server.tool`` call, its arguments, and the result's text or its error),
  ``collab_tool_call`` (a delegation to other agent threads) and ``web_search``: tool calls;
- an ``error`` item is the harness's notice (``system``, actor ``codex``); ``turn.failed`` or a
  top-level ``error`` ends the run: the harness's end record (``harness_exit``).

``item.updated`` events and ``item.started`` events of items that will complete are counted, not
steps; a command that started and never finished (the run was cut off) is a call without a result.
``thread.started`` (0.4x ``session.created``) gives the thread's id, ``turn.completed`` the tokens
used (summed in the header). The stream does not repeat the prompt it was given: the trace has no
principal's request unless the file holds one (``codex exec`` reads it from its arguments or
stdin), and it records no verdict on the task: no outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, harness_exit, pack_raw
from ingest.textlines import bounded_lines, json_line
from schemas.trace import REFUSED, TraceStep

AGENT = "agent"
HARNESS = "codex"
_EVENT = re.compile(
    r'\A\s*\{\s*"type"\s*:\s*"(?:thread\.started|session\.created|turn\.started|item\.(?:started|completed))"'
)
_CALLS = frozenset({"command_execution", "mcp_tool_call", "collab_tool_call", "web_search"})
_MESSAGES = {"agent_message": None, "assistant_message": None, "reasoning": "reasoning", "plan": "plan"}
_USAGE = ("input_tokens", "cached_input_tokens", "output_tokens")


class CodexExecImporter:
    name = "codex-exec"
    description = "OpenAI Codex CLI `codex exec --json` event stream (JSONL), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        if _EVENT.match(head_text(head)):
            return "JSON lines of thread/turn/item events (codex exec --json)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "codex-exec", "Codex CLI (exec)")
        yield ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _Stream(path, facts).steps()
        )


class _Stream:
    """One pass over an event stream: the items in order, the calls started but not yet finished."""

    def __init__(self, path: Path, facts: Facts) -> None:
        self.path = path
        self.where = str(path)
        self.facts = facts
        self.b = StepBuilder(self.where)
        self.started: set[str] = set()  # ids of items whose call is already a step
        self.end: tuple[str, str, dict[str, Any]] | None = None

    def steps(self) -> Iterator[TraceStep]:
        yield from chat_steps(self._messages(), self.b)
        if self.end is not None:
            yield harness_exit(self.b, *self.end)

    def _messages(self) -> Iterator[ChatMessage]:
        with self.path.open("rb") as stream:
            for line, offset, raw in bounded_lines(stream, self.where):
                if not raw.strip():
                    continue
                event = _event(raw, self.where, line, offset)
                kind = event["type"]
                if kind in ("item.started", "item.completed"):
                    yield from self._item(_item(event, self.where, line), kind == "item.started", line)
                    continue
                if kind in ("thread.started", "session.created"):
                    thread = event.get("thread_id", event.get("session_id"))
                    self.facts.metadata.update(pack_raw(thread_id=thread))
                elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
                    used = self.facts.metadata.setdefault("usage", dict.fromkeys(_USAGE, 0))
                    for key in _USAGE:
                        if type(event["usage"].get(key)) is int:
                            used[key] += event["usage"][key]
                elif kind in ("turn.failed", "error"):
                    error = event.get("error", event)
                    text = error.get("message") if isinstance(error, dict) else None
                    self.end = (kind, text if isinstance(text, str) else kind, {"line": line})
                elif kind == "request_user_input":  # each question the agent put to the principal
                    questions = event.get("questions") if isinstance(event.get("questions"), list) else []
                    for q in questions:
                        if isinstance(q, dict) and isinstance(q.get("question"), str):
                            raw = pack_raw(line=line, type=kind, call_id=event.get("call_id"))
                            yield ChatMessage(None, "assistant", AGENT, [Text(q["question"])], raw)
                self.facts.count(kind)

    def _item(self, item: dict[str, Any], started: bool, line: int) -> Iterator[ChatMessage]:
        kind, ident = item["type"], item.get("id")
        raw = pack_raw(line=line, type=kind, id=ident)
        if started:
            if kind in _CALLS and isinstance(ident, str) and ident not in self.started:
                self.started.add(ident)
                yield ChatMessage(None, "assistant", AGENT, [_call(item, kind)], raw)
            else:
                self.facts.count(f"item.started:{kind}")
            return
        if kind in _MESSAGES:
            text = _text(item, "text", self.where, line)
            yield ChatMessage(None, "assistant", AGENT, [Text(text, block=_MESSAGES[kind])], raw)
        elif kind == "todo_list":  # the agent's plan as it last stood: a record, not an act
            self.facts.metadata["todo_list"] = item.get("items")
        elif kind == "error":
            yield ChatMessage(None, "system", HARNESS, [Text(_text(item, "message", self.where, line))], raw)
        elif kind == "file_change":  # a call and its result a file, each naming its path
            changes = item.get("changes") if isinstance(item.get("changes"), list) else []
            for change in changes:
                path = change.get("path") if isinstance(change, dict) else None
                if not isinstance(path, str):
                    raise InputError(
                        "a file change needs a 'path'", path=self.where, line=line, field="item.changes"
                    )
                call = Call("file_change", {"changes": [change]}, ident, path)
                yield ChatMessage(None, "assistant", AGENT, [call], raw)
                yield ChatMessage(None, "tool", None, [_result(item, kind, line, self.where)], raw)
        elif kind in _CALLS:
            if not (isinstance(ident, str) and ident in self.started):
                yield ChatMessage(None, "assistant", AGENT, [_call(item, kind)], raw)
            yield ChatMessage(None, "tool", None, [_result(item, kind, line, self.where)], raw)
        else:
            self.facts.count(f"item:{kind}")


def _call(item: dict[str, Any], kind: str) -> Call:
    """The call an item makes, by the name the agent would see and the arguments it gave."""
    ident = item.get("id")
    if kind == "command_execution":
        command = item.get("command")
        return Call("shell", {"command": command}, ident, command if isinstance(command, str) else "")
    if kind == "mcp_tool_call":
        name = ".".join(str(item[k]) for k in ("server", "tool") if isinstance(item.get(k), str))
        args = item.get("arguments")
        return Call(
            name or "mcp_tool_call", args if isinstance(args, dict) else {"arguments": args}, ident, ""
        )
    if kind == "collab_tool_call":
        prompt = item.get("prompt")
        args = pack_raw(prompt=prompt, receiver_thread_ids=item.get("receiver_thread_ids"))
        return Call(str(item.get("tool") or kind), args, ident, prompt if isinstance(prompt, str) else "")
    query = item.get("query")
    return Call("web_search", {"query": query}, ident, query if isinstance(query, str) else "")


def _result(item: dict[str, Any], kind: str, line: int, where: str) -> Result:
    """What a finished call gave back, with its status (and a command's exit code)."""
    ident, status = item.get("id"), item.get("status")
    failed = status in ("failed", "declined")
    raw: dict[str, Any] = {"status": "error" if failed else "ok"}
    if failed:  # a declined command was refused: it ran nothing
        raw["error_type"] = REFUSED if status == "declined" else status
    if kind == "command_execution":
        text = _text(item, "aggregated_output", where, line, required=False)
        raw |= exit_marks(item.get("exit_code"))
        return Result(text, ident, "shell", raw)
    if kind == "file_change":
        return Result(str(status), ident, "file_change", raw)
    if kind == "mcp_tool_call":
        error = item.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return Result(
                error["message"], ident, None, raw | {"status": "error", "error_type": "tool_error"}
            )
        return Result(_mcp_text(item.get("result")), ident, None, raw)
    if kind == "collab_tool_call":  # the agents' states, each thread's status and last message
        return Result("", ident, None, raw | pack_raw(agents_states=item.get("agents_states")))
    return Result("", ident, None, raw)


def _mcp_text(result: Any) -> str:
    """An MCP result's text blocks, else its structured content as JSON."""
    if not isinstance(result, dict):
        return ""
    blocks = result.get("content") if isinstance(result.get("content"), list) else []
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    if texts:
        return "\n".join(texts)
    structured = result.get("structured_content")
    return json.dumps(structured, ensure_ascii=False) if structured is not None else ""


def _text(item: dict[str, Any], key: str, where: str, line: int, required: bool = True) -> str:
    value = item.get(key)
    if isinstance(value, str):
        return value
    if value is None and not required:
        return ""
    raise InputError(
        f"a {item['type']} item's '{key}' must be text", path=where, line=line, field=f"item.{key}"
    )


def _event(raw: bytes, where: str, line: int, offset: int) -> dict[str, Any]:
    event = json_line(raw, where, line, offset, "codex exec --json writes one JSON object per line")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise InputError("an event must be a JSON object with a 'type'", path=where, line=line, field="type")
    return event


def _item(event: dict[str, Any], where: str, line: int) -> dict[str, Any]:
    """An item event's item, its type under ``type`` (0.4x: ``item_type``)."""
    item = event.get("item")
    if not isinstance(item, dict):
        raise InputError("an item event needs an 'item' object", path=where, line=line, field="item")
    kind = item.get("type", item.get("item_type"))
    if not isinstance(kind, str):
        raise InputError("an item needs a 'type'", path=where, line=line, field="item.type")
    return {**item, "type": kind}


IMPORTER = CodexExecImporter()
