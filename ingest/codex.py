"""OpenAI Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): one trace
per file, every JSON line one record ``{"timestamp", "type", "payload"}``.

``response_item`` records hold the conversation as the Responses API writes it, and they are the
steps, in file order:

- a ``message``: the principal's words (``user``, human), the agent's (``assistant``, actor
  ``agent``), text parts joined; a user message that is the harness's own context rather than a
  request (it opens with ``<environment_context>`` or ``<user_instructions>``: the working
  directory and sandbox, the project's AGENTS.md) is the harness speaking (``system``, actor
  ``codex``);
- a ``reasoning`` item's summary: the agent's message marked ``raw.block = "reasoning"`` (its
  encrypted content is left in the source);
- a ``function_call`` (``shell``, ``exec_command`` …) or ``custom_tool_call`` (``apply_patch``):
  the agent's tool call, its JSON ``arguments`` parsed (a ``shell`` command is an argv list,
  ``["bash", "-lc", script]``), a custom tool's ``input`` (``apply_patch``'s patch: ``*** Begin
  Patch``, ``*** Update File: PATH`` …) as ``{"input": …}`` and as the step's text;
- a ``function_call_output`` / ``custom_tool_call_output``: the result of the call its ``call_id``
  names. Its ``output`` is often itself JSON, ``{"output": text, "metadata": {"exit_code": N}}``:
  the text is the result, the exit code its ``raw.exit_code`` and status (0 ``ok``, else
  ``error``); a plain-text output is kept as written (a list of content items: their texts).
  The unified exec tools (``exec_command``, ``write_stdin``) write a plain-text preamble before
  ``Output:`` (``Chunk ID``, ``Wall time``, then ``Process exited with code N`` once the process
  ended, ``Process running with session ID N`` while it runs): an exit code there is the result's.
  A command still running when ``exec_command`` returned went on in the background: that result
  says only that it started (``raw.background_task``, the session id), and the ``write_stdin``
  results on that session are its output (``raw.output_of`` names the call that started it), the
  one that shows it exited giving its exit code; one that writes it ^C or ^D stops it, its answer
  ``raw.stopped``, the end the agent gave it, no check's outcome.

``session_meta`` (the session's id, ``cwd``, ``cli_version``, ``originator``, git) and the first
``turn_context`` (model, approval and sandbox policy) go to the header. ``event_msg`` records repeat
the conversation for the UI (``user_message``, ``agent_message``, ``agent_reasoning``) or count
tokens: they are counted, not steps, save ``turn_aborted`` (the user stopped the turn) and
``error``, which end the run: the harness's end record (``harness_exit``). A rollout records no
verdict on its task: no outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text, arguments
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import harness_exit, pack_raw
from ingest.textlines import bounded_lines, json_line
from schemas.trace import TraceStep

AGENT = "agent"
HARNESS = "codex"
_CONTEXT = re.compile(r"\A\s*<(?:environment_context|user_instructions)>")  # the harness's own turns
_RECORD = re.compile(
    r'\A\s*\{"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:session_meta|response_item|turn_context|event_msg)"'
)
_ENDS = frozenset({"turn_aborted", "error"})
_UNIFIED = frozenset({"exec_command", "write_stdin"})  # the unified exec tools, one output layout
# their output's preamble: at most a few lines before ``Output:``, ``Wall time`` among them
_PREAMBLE_LINES = 8
_EXITED = re.compile(r"Process exited with code (-?\d+)")
_STOP_KEYS = ("\x03", "\x04")  # ^C, ^D written to a running process: the agent stops it
_RUNNING = re.compile(r"Process running with (?:session ID|id) (\d+)")
_META_KEYS = ("cwd", "cli_version", "originator", "git")  # and the session's id, as session_id


class CodexImporter:
    name = "codex"
    description = "OpenAI Codex CLI session rollout (JSONL), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        if _RECORD.match(head_text(head)) and '"payload"' in head_text(head):
            return "JSON lines of {timestamp, type, payload} rollout records (Codex CLI)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "codex", "Codex CLI")
        yield ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _Rollout(path, facts).steps()
        )


class _Rollout:
    """One pass over a rollout: its records in order, each call's tool name kept for its output."""

    def __init__(self, path: Path, facts: Facts) -> None:
        self.path = path
        self.facts = facts
        self.b = StepBuilder(str(path))
        self.tools: dict[str, str] = {}  # call id -> tool name
        self.background: dict[str, str] = {}  # a running process's session id -> the call that started it
        self.polls: dict[
            str, tuple[str, bool]
        ] = {}  # a write_stdin call -> (its session, whether it stops it)
        self.end: tuple[str, str, dict[str, Any]] | None = None
        self.task_seen = False

    def steps(self) -> Iterator[TraceStep]:
        yield from chat_steps(self._messages(), self.b)
        if self.end is not None:
            yield harness_exit(self.b, *self.end)

    def _messages(self) -> Iterator[ChatMessage]:
        where = str(self.path)
        with self.path.open("rb") as stream:
            for line, offset, raw in bounded_lines(stream, where):
                if not raw.strip():
                    continue
                record = _record(raw, where, line, offset)
                kind, payload = record.get("type"), record["payload"]
                item = payload.get("type")
                if kind == "response_item":
                    message = self._item(payload, item, Loc(where, "payload", line), record.get("timestamp"))
                    if message is not None:
                        yield message
                        continue
                elif kind == "session_meta":
                    meta = {k: payload.get(k) for k in _META_KEYS}
                    self.facts.metadata.update(pack_raw(session_id=payload.get("id"), **meta))
                elif kind == "turn_context" and "turn_context" not in self.facts.metadata:
                    self.facts.metadata["turn_context"] = payload
                elif kind == "event_msg" and item in _ENDS:
                    text = payload.get("message") or payload.get("reason") or item
                    self.end = (str(item), str(text), {"line": line})
                self.facts.count(f"{kind}:{item}" if isinstance(item, str) else str(kind))

    def _item(self, payload: dict[str, Any], item: Any, loc: Loc, stamp: Any) -> ChatMessage | None:
        timestamp = stamp if isinstance(stamp, str) else None
        raw = pack_raw(line=loc.line, type=item, id=payload.get("id"))
        if item == "message":
            role = payload.get("role")
            text = _text(payload.get("content"), loc)
            if role == "assistant":
                return ChatMessage(None, "assistant", AGENT, [Text(text)], raw, timestamp=timestamp)
            if _CONTEXT.match(text) or role in ("developer", "system"):
                return ChatMessage(None, "system", HARNESS, [Text(text)], raw, timestamp=timestamp)
            if not self.task_seen:
                self.facts.task, self.task_seen = text, True
            return ChatMessage(None, "user", None, [Text(text)], raw, timestamp=timestamp)
        if item == "reasoning":
            summary = payload.get("summary")
            texts = (
                [s.get("text") for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
            )
            joined = "\n".join(t for t in texts if isinstance(t, str))
            if not joined:
                return None  # encrypted reasoning alone: nothing the trace can quote
            return ChatMessage(
                None, "assistant", AGENT, [Text(joined, block="reasoning")], raw, timestamp=timestamp
            )
        if item in ("function_call", "custom_tool_call"):
            name, call_id = payload.get("name"), payload.get("call_id")
            if not isinstance(name, str) or not name:
                raise loc.error("a tool call needs a 'name'", ".name")
            if item == "function_call":
                args, verbatim = arguments(payload.get("arguments"), loc, ".arguments")
            else:
                text = payload.get("input")
                args, verbatim = {"input": text}, text if isinstance(text, str) else ""
            if isinstance(call_id, str):
                self.tools[call_id] = name
                if name == "write_stdin" and isinstance(args, dict) and args.get("session_id") is not None:
                    chars = args.get("chars")
                    stops = isinstance(chars, str) and any(key in chars for key in _STOP_KEYS)
                    self.polls[call_id] = (str(args["session_id"]), stops)
            return ChatMessage(
                None, "assistant", AGENT, [Call(name, args, call_id, verbatim)], raw, timestamp=timestamp
            )
        if item in ("function_call_output", "custom_tool_call_output"):
            call_id = payload.get("call_id")
            content, status = _output(payload.get("output"), loc)
            name = self.tools.get(call_id) if isinstance(call_id, str) else None
            if name in _UNIFIED and not status:
                status = self._unified(name, str(call_id), content)
            return ChatMessage(
                None, "tool", name, [Result(content, call_id, name, status)], raw, timestamp=timestamp
            )
        return None

    def _unified(self, name: str, call_id: str, output: str) -> dict[str, Any]:
        """The status a unified exec output's preamble gives (the module doc): its exit code, or
        that its process runs on in the background, or which background process it shows."""
        head = output.split("\n", _PREAMBLE_LINES)[:_PREAMBLE_LINES]
        preamble = head[: head.index("Output:")] if "Output:" in head else []
        if not any(line.startswith("Wall time: ") for line in preamble):
            return {}
        raw: dict[str, Any] = {}
        session, stops = self.polls.get(call_id, (None, False)) if name == "write_stdin" else (None, False)
        if session in self.background:  # what it printed since; a ^C the agent sent ended it (no check)
            raw["stopped" if stops else "output_of"] = self.background[session]
        for line in preamble:
            if exited := _EXITED.fullmatch(line):
                code = int(exited.group(1))
                status = {"status": "ok"} if code == 0 else {"status": "error", "status_message": line}
                return raw | status | {"exit_code": code}
        running = next((m for line in preamble if (m := _RUNNING.fullmatch(line))), None)
        if name == "exec_command" and running is not None:
            self.background[running.group(1)] = call_id
            raw["background_task"] = running.group(1)
        return raw


def _output(value: Any, loc: Loc) -> tuple[str, dict[str, Any]]:
    """A call's output text and status: the JSON envelope's ``output`` and ``metadata.exit_code``,
    else the text as written; a list of content items, their texts."""
    if isinstance(value, list):
        return "\n".join(
            i["text"] for i in value if isinstance(i, dict) and isinstance(i.get("text"), str)
        ), {}
    if not isinstance(value, str):
        raise loc.error("a call's output must be text", ".output")
    try:
        envelope = json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value, {}
    if not isinstance(envelope, dict) or not isinstance(envelope.get("output"), str):
        return value, {}
    metadata = envelope.get("metadata") if isinstance(envelope.get("metadata"), dict) else {}
    code = metadata.get("exit_code")
    if type(code) is not int:
        return envelope["output"], {}
    status = {"status": "ok"} if code == 0 else {"status": "error", "error_type": "exit_code"}
    return envelope["output"], {**status, "exit_code": code}


def _text(content: Any, loc: Loc) -> str:
    """A message's text parts (``input_text``, ``output_text``), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise loc.error("a message's 'content' must be a list of parts", ".content")
    texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "\n".join(texts)


def _record(raw: bytes, where: str, line: int, offset: int) -> dict[str, Any]:
    record = json_line(raw, where, line, offset, "a Codex rollout holds one JSON object per line")
    if not isinstance(record, dict) or not isinstance(record.get("payload"), dict):
        raise InputError(
            "a record must be an object with a 'payload' object", path=where, line=line, field="payload"
        )
    if not isinstance(record.get("type"), str) or not isinstance(record["payload"].get("type"), str | None):
        raise InputError("a record's 'type' must be text", path=where, line=line, field="type")
    return record


IMPORTER = CodexImporter()
