"""The Cursor CLI agent's headless output (``cursor-agent -p --output-format stream-json``, as CI
jobs and wrappers save it): one trace per file, every JSON line one event ``{"type", …}``.

- ``system`` ``init``: the header (session id, ``cwd``, the model's display name, permission mode);
- ``user``: the principal's prompt (the CLI echoes it);
- ``assistant``: the agent's words. With ``--stream-partial-output`` the CLI writes them twice: as
  deltas (a ``timestamp_ms`` and no ``model_call_id``), then whole (the message before a tool call
  names its ``model_call_id``; the last names neither). The whole message is the step; deltas that
  no whole message follows (a capture cut short) are joined into one;
- ``thinking``: its deltas joined into one reasoning step (``raw.block``) when it ``completed``;
- ``tool_call``: ``started`` is the call — the one ``<kind>ToolCall`` it holds names the tool
  (``shellToolCall``: ``shell``, with its ``command``; ``editToolCall``: ``edit``, with its
  ``path`` and ``streamContent``; ``read``, ``write``, ``grep``, ``ls``, ``glob``, ``delete``,
  ``todo``, ``mcp`` …) — and ``completed`` its result, linked by ``call_id``: ``success`` (a shell's
  ``interleavedOutput`` and ``exitCode``, a non-zero code an error; an edit's ``message`` (its
  ``diffString`` kept in ``raw``), and whether it made the file, ``raw.written``; a read's
  ``content``), ``failure`` (an error, with the shell's output and code: where a command exits
  non-zero), ``spawnError`` (the shell never started), ``rejected`` (the user or the permission
  settings refused it: ``error_type: refused``, it ran nothing), ``error`` (its ``errorMessage``:
  a read of a file that is not there);
- ``result``: the header (duration, request id, usage; its ``result`` repeats every message's
  text, so it is no step); a ``subtype`` other than ``success`` or ``is_error`` ends the run with
  the harness's record;
- ``connection`` and ``retry`` notices: counted in the header. Lines that are no JSON (the CLI's
  stderr, captured with its output: ``RetriableError: …``) are the CLI speaking (``system``, actor
  ``cursor-agent``), one message for the lines in a row.

The stream records no verdict on the task: no outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, harness_exit, pack_raw
from ingest.textlines import bounded_lines, json_line
from schemas.trace import REFUSED, TraceStep

AGENT = "agent"
HARNESS = "cursor-agent"
_HINT = "the Cursor CLI's stream-json holds one JSON object per line"
_HEADER = {"session_id": "session_id", "cwd": "cwd", "model": "model", "permissionMode": "permission_mode"}
_RESULT_HEADER = {
    "duration_ms": "duration_ms",
    "request_id": "request_id",
    "usage": "usage",
    "subtype": "result",
}
# what a tool's result says, the first of these it holds: a shell's output (interleaved, as printed),
# a file's text, an edit's account of its write (its diff stays in raw), a message
_SAID = (
    "interleavedOutput",
    "stdout",
    "content",
    "message",
    "diffString",
    "output",
    "error",
    "errorMessage",
    "reason",
    "text",
)
_COPIES = ("afterFullFileContent", "beforeFullFileContent")  # the file, whole: the source keeps it
_OUTCOMES = ("success", "failure", "spawnError", "rejected", "error")


class CursorAgentImporter:
    name = "cursor-agent"
    description = "Cursor CLI agent `cursor-agent -p --output-format stream-json` (JSONL), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        first = head_text(head).lstrip().partition("\n")[0]
        try:
            record = json.loads(first)
        except ValueError:
            return None
        if (
            isinstance(record, dict)
            and (record.get("type"), record.get("subtype")) == ("system", "init")
            and "apiKeySource" in record
            and "tools" not in record  # Claude Code's init lists its tools
        ):
            return "JSON lines opened by a system init record with no tool list (Cursor CLI stream-json)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "cursor-agent", "Cursor CLI")
        yield ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _Stream(path, facts).steps()
        )


class _Stream:
    def __init__(self, path: Path, facts: Facts) -> None:
        self.path, self.where, self.facts = path, str(path), facts
        self.b = StepBuilder(self.where)
        self.deltas: list[tuple[str, Loc]] = []  # the agent's words as they streamed
        self.thinking: list[tuple[str, Loc]] = []
        self.stderr: list[tuple[str, int]] = []
        self.end: tuple[Any, str, dict[str, Any]] | None = None

    def steps(self) -> Iterator[TraceStep]:
        yield from chat_steps(self._messages(), self.b)
        if self.end is not None:
            yield harness_exit(self.b, *self.end)

    def _messages(self) -> Iterator[ChatMessage]:
        with self.path.open("rb") as stream:
            for line, offset, raw in bounded_lines(stream, self.where):
                if not raw.strip():
                    continue
                loc = Loc(self.where, "", line)
                if raw.lstrip()[:1] not in (b"{", b"["):  # the CLI's stderr, captured with its output
                    self.stderr.append((raw.decode("utf-8", errors="replace").rstrip("\r\n"), line))
                    continue
                yield from self._stderr()
                event = json_line(raw, self.where, line, offset, _HINT)
                if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                    raise InputError(
                        "an event must be a JSON object with a 'type'", path=self.where, line=line
                    )
                yield from self._event(event, loc)
        yield from self._stderr()
        yield from self._flushed()

    def _stderr(self) -> Iterator[ChatMessage]:
        """Lines of the CLI's stderr in a row: one message (a traceback, a key, a notice)."""
        if self.stderr:
            yield from self._flushed()
            text, line = "\n".join(t for t, _ in self.stderr), self.stderr[0][1]
            self.stderr = []
            yield ChatMessage(None, "system", HARNESS, [Text(text)], {"line": line, "stream": "stderr"})

    def _event(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        kind, raw = event["type"], {"line": loc.line}
        if kind == "assistant" and "timestamp_ms" in event and "model_call_id" not in event:
            self.deltas.append((_text(event, loc), loc))
            return
        if kind == "thinking":
            if event.get("subtype") == "delta" and isinstance(event.get("text"), str):
                self.thinking.append((event["text"], loc))
            elif event.get("subtype") == "completed":
                yield from self._thought()
            return
        if kind == "assistant":
            self.deltas.clear()  # the whole message they streamed
            yield from self._thought()
            yield ChatMessage(None, "assistant", AGENT, [Text(_text(event, loc))], raw)
            return
        yield from self._flushed()
        if kind == "system" and event.get("subtype") == "init":
            self._header(event, _HEADER)
        elif kind == "user":
            text = _text(event, loc)
            if self.facts.task is None and text.strip():
                self.facts.task = text
            yield ChatMessage(None, "user", None, [Text(text)], raw)
        elif kind == "tool_call":
            yield from self._tool(event, loc)
        elif kind == "result":
            self._header(event, _RESULT_HEADER)
            if event.get("subtype") != "success" or event.get("is_error") is True:
                said = event.get("result") if isinstance(event.get("result"), str) else ""
                self.end = (event.get("subtype") or "error", said, raw)
        else:
            self.facts.count(f"event:{kind}")

    def _tool(self, event: dict[str, Any], loc: Loc) -> Iterator[ChatMessage]:
        holder = event.get("tool_call")
        calls = (
            [(k, v) for k, v in holder.items() if k.endswith("ToolCall")] if isinstance(holder, dict) else []
        )
        if len(calls) != 1 or not isinstance(calls[0][1], dict):
            raise loc.error("a tool call must hold one '<kind>ToolCall' object", "tool_call")
        key, call = calls[0]
        name, call_id = key.removesuffix("ToolCall"), event.get("call_id")
        raw = {"line": loc.line}
        if event.get("subtype") == "started":
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            yield ChatMessage(None, "assistant", AGENT, [Call(name, args, call_id, "")], raw)
        elif event.get("subtype") == "completed":
            yield ChatMessage(None, "tool", None, [_result(name, call, call_id, loc, key)], raw)
        else:
            self.facts.count(f"tool_call:{event.get('subtype')}")

    def _thought(self) -> Iterator[ChatMessage]:
        if self.thinking:
            text, loc = "".join(t for t, _ in self.thinking), self.thinking[0][1]
            self.thinking = []
            yield ChatMessage(None, "assistant", AGENT, [Text(text, block="reasoning")], {"line": loc.line})

    def _flushed(self) -> Iterator[ChatMessage]:
        """What streamed and was never written whole (the capture was cut), as one message."""
        yield from self._thought()
        if self.deltas:
            text, loc = "".join(t for t, _ in self.deltas), self.deltas[0][1]
            self.deltas = []
            yield ChatMessage(None, "assistant", AGENT, [Text(text)], {"line": loc.line, "streamed": True})

    def _header(self, event: dict[str, Any], keys: dict[str, str]) -> None:
        for key, name in keys.items():
            if isinstance(event.get(key), str | int | dict) and not isinstance(event.get(key), bool):
                self.facts.metadata[name] = event[key]


def _text(event: dict[str, Any], loc: Loc) -> str:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise loc.error("a message's content must be text or a list of parts", "message.content")
    return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def _result(name: str, call: dict[str, Any], call_id: Any, loc: Loc, key: str) -> Result:
    """A completed call's result: what it said, its status and, for a shell, its exit code."""
    result = call.get("result")
    outcomes = [k for k in _OUTCOMES if isinstance(result, dict) and k in result]
    if not outcomes or not isinstance(result[outcomes[0]], dict):
        raise loc.error(
            "a completed call's result must hold success, failure, rejected or an error",
            f"tool_call.{key}.result",
        )
    outcome, payload = outcomes[0], result[outcomes[0]]
    said = next((payload[k] for k in _SAID if isinstance(payload.get(k), str) and payload[k]), "")
    raw: dict[str, Any] = {"status": "ok" if outcome == "success" else "error", "outcome": outcome}
    if outcome == "rejected":
        raw["error_type"] = REFUSED  # refused before it ran: no observation
    elif outcome != "success":
        raw["error_type"] = "spawn" if outcome == "spawnError" else "error"
    raw |= exit_marks(payload.get("exitCode"))
    path, diff = payload.get("path"), payload.get("diffString")
    if name in ("edit", "write") and outcome == "success" and isinstance(path, str):
        raw["written"] = {"path": path, "created": isinstance(diff, str) and diff.startswith("--- /dev/null")}
    raw["result"] = pack_raw(**{k: v for k, v in payload.items() if k not in _COPIES and v != said})
    return Result(said, call_id, name, raw)


IMPORTER = CursorAgentImporter()
