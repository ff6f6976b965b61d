"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``): one trace per
file, every JSON line one record.

A record's ``type`` says what it is. ``user`` and ``assistant`` records hold a Messages API
``message`` (text, ``thinking``, ``tool_use`` and ``tool_result`` blocks; an assistant reply is
often written one block per record); the rest are the harness's bookkeeping (``summary``,
``file-history-snapshot``, ``system`` notices, ``queue-operation``, ``progress`` …), counted in the
header, not steps. So the steps are, in file order:

- a ``user`` record's text: the principal's words (human ``user``); one the harness wrote itself
  (``isMeta``, a compaction's summary ``isCompactSummary``) is the harness speaking (``system``
  actor ``claude-code``);
- an ``assistant`` record's blocks: the agent's messages (thinking marked ``raw.block``) and tool
  calls, the call's ``input`` as its arguments (a ``Bash`` call's ``command``, an ``Edit``'s
  ``file_path``, ``old_string`` and ``new_string`` …);
- a ``tool_result`` block: the result of the call it names (actor: the tool), ``is_error`` its
  status. A failed ``Bash`` result opens with ``Exit code N``: that is its ``raw.exit_code``; a
  ``Bash`` result that is no error exited 0. The record's ``toolUseResult`` (the harness's own
  account: stdout and stderr, ``interrupted``, an edit's ``filePath``, its ``type`` — ``create`` or
  ``update`` — and ``structuredPatch``) is kept in ``raw.tool_use_result``, less its copies of the
  file (``originalFile``, ``content``, ``file``), which the source keeps;
- the harness's reminder appended to a file it read (a ``<system-reminder>`` block that ends a
  ``Read`` result on a line of its own, where every line of the file is numbered): a ``system``
  step of ``claude-code`` after the result, which keeps the file's text alone.

Subagents: a ``Task`` (or ``Agent``) call delegates to a subagent whose records are marked
``isSidechain`` (with its ``agentId``; Claude Code 1.x wrote them into the session's file, 2.x into
``subagents/agent-<id>.jsonl`` beside it, each its own trace). The subagent is its own actor, named
by the call's ``subagent_type`` when the file holds the call, and its id (``Explore:a1b2c3``); the
prompt that opens its conversation is the delegating agent's message to it, not the principal's.
The main agent is ``claude``.

The session's ``cwd``, ``sessionId``, ``version``, ``gitBranch`` and the models seen go to the
header. A session records no verdict on its task: no outcome.

Records are read in file order; a conversation rewound or branched in the transcript (records
whose ``parentUuid`` points back) keeps every branch, each record's ``uuid`` and ``parentUuid``
in ``raw``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_digest, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text, role_message
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import pack_raw
from ingest.textlines import bounded_lines
from schemas.trace import TraceHeader, TraceStep

MAIN = "claude"
HARNESS = "claude-code"
DELEGATING = frozenset({"Task", "Agent"})  # the tools that hand work to a subagent
_TURNS = frozenset({"user", "assistant"})
# The harness's reminder appended to a file it read: a block that opens a line (every line of the
# file itself is numbered, ``   12→``, so a file cannot forge one) and ends the result.
_REMINDER = re.compile(r"\n*(?:(?<=\n)|\A)(<system-reminder>\n.*\n</system-reminder>)\s*\Z", re.S)
_EXIT = re.compile(r"\A(?:Error: )?Exit code (-?\d+)\b")
_SESSION = re.compile(r'"sessionId"\s*:\s*"')
_RECORD = re.compile(r'"type"\s*:\s*"(?:user|assistant|summary|system|file-history-snapshot)"')
_SHAPE = re.compile(r'"(?:parentUuid|isSidechain|leafUuid)"\s*:')
_FILE_COPIES = ("originalFile", "content", "file")  # the harness's copies of a file: the source keeps them
_HEADER_KEYS = ("cwd", "sessionId", "version", "gitBranch")


class ClaudeCodeImporter:
    name = "claude-code"
    description = "Claude Code session transcript (JSONL), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if (
            text.lstrip().startswith("{")
            and _SESSION.search(text)
            and _RECORD.search(text)
            and _SHAPE.search(text)
        ):
            return "JSON lines of session records with a sessionId and user/assistant messages (Claude Code)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        digest = file_digest(path)
        header = TraceHeader(
            trace_id=f"claude-code-{digest[:16]}",
            source=str(path),
            framework="Claude Code",
            metadata={"source_sha256": digest},
        )
        yield ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _Session(path, facts).steps()
        )


class _Session:
    """One pass over a session file: the records in order, with the calls that delegated so far."""

    def __init__(self, path: Path, facts: Facts) -> None:
        self.path = path
        self.facts = facts
        self.b = StepBuilder(str(path))
        self.tools: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> (tool name, input)
        self.subagents: dict[str, str] = {}  # agentId or delegating call id -> actor
        self.prompts: dict[str, str] = {}  # a delegating call's prompt -> its subagent type
        self.task_seen = False
        self.notes: list[ChatMessage] = []  # the harness's reminders split off the last record's results

    def steps(self) -> Iterator[TraceStep]:
        return chat_steps(self._messages(), self.b)

    def _messages(self) -> Iterator[ChatMessage]:
        where = str(self.path)
        with self.path.open("rb") as stream:
            for line, offset, raw in bounded_lines(stream, where):
                if not raw.strip():
                    continue
                record = _record(raw, where, line, offset)
                kind = record.get("type")
                if kind in _TURNS and isinstance(record.get("message"), dict):
                    yield self._message(record, line)
                    yield from self.notes
                    self.notes.clear()
                else:
                    self.facts.count(f"record:{kind}")

    def _message(self, record: dict[str, Any], line: int) -> ChatMessage:
        loc = Loc(str(self.path), "", line)
        m = role_message(record["message"], line, loc, at="message")
        self._header(record)
        if m.role == "assistant" and isinstance(record["message"].get("model"), str):
            models = self.facts.metadata.setdefault("models", [])
            if record["message"]["model"] not in models:
                models.append(record["message"]["model"])
        subagent = self._subagent(record, m)
        if m.role == "assistant":
            name, role = subagent or MAIN, "assistant"
            for call in m.parts:
                if isinstance(call, Call) and isinstance(call.call_id, str):
                    self._called(call.call_id, call.name, call.arguments)
        elif any(isinstance(p, Result) for p in m.parts):
            name, role = None, "user"
            m.parts = [self._result(p, record) if isinstance(p, Result) else p for p in m.parts]
        elif record.get("isMeta") or record.get("isCompactSummary"):
            name, role = HARNESS, "system"
        elif subagent is not None:
            name, role = MAIN, "assistant"  # the delegating agent's prompt to its subagent
        else:
            name, role = None, "user"
            if not self.task_seen and (text := _text_of(m)):
                self.facts.task, self.task_seen = text, True
        raw = pack_raw(
            line=line,
            type=record.get("type"),
            uuid=record.get("uuid"),
            parentUuid=record.get("parentUuid"),
            isSidechain=record.get("isSidechain") or None,
            agentId=record.get("agentId"),
            isMeta=record.get("isMeta"),
            message={k: v for k, v in record["message"].items() if k not in ("role", "content")},
        )
        return replace(m, index=None, role=role, name=name, raw=raw, timestamp=record.get("timestamp"))

    def _called(self, call_id: str, name: str, arguments: Any) -> None:
        args = arguments if isinstance(arguments, dict) else {}
        self.tools[call_id] = (name, args)
        if name in DELEGATING and isinstance(args.get("prompt"), str):
            self.prompts[args["prompt"]] = str(args.get("subagent_type") or "subagent")

    def _subagent(self, record: dict[str, Any], m: ChatMessage) -> str | None:
        """The subagent a record belongs to (None: the main agent's conversation)."""
        if not record.get("isSidechain"):
            return None
        key = str(record.get("agentId") or record.get("sessionId") or "")
        if key not in self.subagents:
            kind = self.prompts.get(_text_of(m), "subagent")
            self.subagents[key] = f"{kind}:{key[:6]}" if key else kind
        return self.subagents[key]

    def _result(self, result: Result, record: dict[str, Any]) -> Result:
        """A tool result with the harness's account of it and, for a shell command, its exit code."""
        tool, _ = self.tools.get(str(result.call_id), ("", {}))
        raw = dict(result.raw)
        note = _REMINDER.search(result.content) if tool == "Read" else None
        if note is not None:
            self.notes.append(
                ChatMessage(
                    None,
                    "system",
                    HARNESS,
                    [Text(note.group(1))],
                    pack_raw(appended_to=result.call_id),
                    timestamp=record.get("timestamp"),
                )
            )
            result = replace(result, content=result.content[: note.start()])
        account = record.get("toolUseResult")
        if isinstance(account, dict):
            raw["tool_use_result"] = {k: v for k, v in account.items() if k not in _FILE_COPIES}
        elif account is not None:
            raw["tool_use_result"] = account
        if tool == "Bash":
            if raw.get("status") == "error" and (code := _EXIT.match(result.content)):
                raw["exit_code"] = int(code.group(1))
            elif raw.get("status") == "ok":
                raw["exit_code"] = 0
            if isinstance(account, dict) and account.get("interrupted") is True:
                raw["status"], raw["error_type"] = "error", "interrupted"
        return replace(result, raw=raw)

    def _header(self, record: dict[str, Any]) -> None:
        for key in _HEADER_KEYS:
            value = record.get(key)
            if isinstance(value, str) and value and key not in self.facts.metadata:
                self.facts.metadata[key] = value


def _record(raw: bytes, where: str, line: int, offset: int) -> dict[str, Any]:
    try:
        record = json.loads(raw.decode("utf-8-sig" if line == 1 else "utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError("not UTF-8 text", path=where, line=line, offset=offset + exc.start) from exc
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(
            f"not a JSON record: {exc}",
            path=where,
            line=line,
            hint="a Claude Code session file holds one JSON object per line",
        ) from exc
    if not isinstance(record, dict):
        raise InputError("a record must be a JSON object", path=where, line=line)
    if not isinstance(record.get("type"), str | None):
        raise InputError("a record's 'type' must be text", path=where, line=line, field="type")
    if "message" in record and record.get("type") in _TURNS and not isinstance(record["message"], dict):
        raise InputError("must be a JSON object", path=where, line=line, field="message")
    return record


def _text_of(m: ChatMessage) -> str:
    return "\n".join(p.text for p in m.parts if isinstance(p, Text) and p.block is None).strip()


IMPORTER = ClaudeCodeImporter()
