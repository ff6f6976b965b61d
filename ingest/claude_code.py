"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``): one trace per
file, every JSON line one record.

A record's ``type`` says what it is. ``user`` and ``assistant`` records hold a Messages API
``message`` (text, ``thinking``, ``tool_use`` and ``tool_result`` blocks; an assistant reply is
often written one block per record); the rest are the harness's bookkeeping (``summary``,
``file-history-snapshot``, ``system`` notices, ``queue-operation``, ``progress`` …), counted in the
header, not steps. So the steps are, in file order:

- a ``user`` record's text: the principal's words (human ``user``); one the harness wrote itself
  (``isMeta``, a compaction's summary ``isCompactSummary``, a hook's feedback ``isSynthetic``, 2.1's
  ``<task-notification>`` turn that a background task ended) is the harness speaking (``system``
  actor ``claude-code``), as is a reply the harness wrote in the model's place (model
  ``<synthetic>``: an API error, a local command's outcome);
- an ``assistant`` record's blocks: the agent's messages (thinking marked ``raw.block``) and tool
  calls, the call's ``input`` as its arguments (a ``Bash`` call's ``command``, an ``Edit``'s
  ``file_path``, ``old_string`` and ``new_string`` …);
- a ``tool_result`` block: the result of the call it names (actor: the tool), ``is_error`` its
  status (the harness sets it on every result that failed, so a result without it succeeded: a
  file read that mentions a failure is no failed read). A failed ``Bash`` result opens with
  ``Exit code N``: that is its ``raw.exit_code``; a ``Bash`` result that is no error exited 0. The
  record's ``toolUseResult`` (the harness's own account: stdout and stderr, ``interrupted``, an
  edit's ``filePath``, its ``type`` — ``create`` or ``update`` — and ``structuredPatch``) is kept
  in ``raw.tool_use_result``, less its copies of the file (``originalFile``, ``content``,
  ``file``), which the source keeps;
- a command run in the background (``run_in_background``): its result says only that it started
  (the account's ``backgroundTaskId``: ``raw.background_task``, no exit code). Its output comes
  later, when the agent reads it: 2.0's ``BashOutput`` (``bash_id``; the account's ``exitCode``,
  ``null`` while it runs), 2.1's ``TaskOutput`` (``task_id``; the account's ``task.exitCode``) or a
  ``Read`` of the task's output file (``<task id>.output``, whose last line is ``[exited with code
  N]``). Such a read's result is the command's (``raw.output_of`` names the call that started it),
  the code it shows its exit code, a non-zero one failing it as a failed command's result fails;
  the harness's word that it ended (a ``task_notification`` record, ``… (exit code N)``; 2.1's
  ``<task-notification>`` turn, ``<task-id>`` and a ``<summary>`` ending ``… exit code N``)
  carries the same marks. A command the agent stopped (``KillShell``, 2.1's ``TaskStop``) shows
  no exit code: its end was the agent's doing (the stop's answer is ``raw.stopped``, naming the
  call that started it);
- the harness's reminder appended to a file it read (a ``<system-reminder>`` block that ends a
  ``Read`` result on a line of its own, where every line of the file is numbered): a ``system``
  step of ``claude-code`` after the result, which keeps the file's text alone.

Subagents: a ``Task`` (or ``Agent``) call delegates to a subagent whose records are marked
``isSidechain`` (with its ``agentId``). Claude Code 1.x wrote them into the session's file; 2.x
writes each subagent's conversation to a file of its own, ``<session>/subagents/agent-<id>.jsonl``
(2.0: ``agent-<id>.jsonl`` beside the session's file), which is read with the session: its steps
follow the call whose prompt opens it (the prompt is all that links them), so the trace holds the
delegation, the subagent's work and the report it hands back, in the order they happened; a
subagent file no call opens follows the session's own steps. The subagent is its own actor, named
by the call's ``subagent_type`` and its id (``Explore:a2271d``); the prompt that opens its
conversation is the delegating agent's message to it, not the principal's. The main agent is
``agent`` (not the product's name, which projects write everywhere). A subagent's file read alone
is a trace of its own.

Headless mode (``claude -p --output-format stream-json --verbose``, format ``claude-code-stream``)
writes the same ``user`` and ``assistant`` records, read the same way; the Claude Code GitHub
Action's execution file holds them as one JSON array (a record then named by its place, ``[n]``).
They stand between a ``system`` record ``init`` (the session's id, ``cwd``, model, version,
permission mode and tools: the header) and a ``result`` record (its subtype, turns, cost and the
permissions denied: the header; a subtype other than ``success``, such as ``error_max_turns``, or
``is_error`` ends the run with the harness's end record). What a hook handed the agent (a
``hook_response``'s output) and the harness's word that a background task ended (a
``task_notification``'s summary, naming the call that started it) are the harness speaking. A call
the result lists as denied permission ran nothing: its result is an error whose ``error_type`` is
``refused``. A subagent's records name the call that delegated to it (``parent_tool_use_id``); the
harness's account of a result is ``tool_use_result``. The prompt the run was given is not written
unless replayed (``--replay-user-messages``): without it the trace has no principal's request.

The session's ``cwd``, ``sessionId``, ``version``, ``gitBranch`` and the models seen go to the
header. A session records no verdict on its task: no outcome.

Records are read in file order; a conversation rewound or branched in the transcript (records
whose ``parentUuid`` points back) keeps every branch, each record's ``uuid`` and ``parentUuid``
in ``raw``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_digest, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text, role_message
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, harness_exit, pack_raw
from ingest.jsonstream import JsonReader
from ingest.textlines import bounded_lines, json_line
from schemas.trace import REFUSED, TraceStep

MAIN = "agent"  # the main agent (the subagents are named by their type); not the product, which data names everywhere
HARNESS = "claude-code"
DELEGATING = frozenset({"Task", "Agent"})  # the tools that hand work to a subagent
_TURNS = frozenset({"user", "assistant"})
_OPEN, _CLOSE = "<system-reminder>\n", "\n</system-reminder>"
_EXIT = re.compile(r"\A(?:Error: )?Exit code (-?\d+)\b")
# the harness's last line of a background command's output file (``[exited with code 1]``), as a
# ``Read`` shows it (numbered ``3\t`` or ``   3→``), and the end of its word that such a command ended
_EXITED = re.compile(r"(?m)^(?: *\d+(?:\t|→))?(\[exited with code (-?\d+)\])$")
_NOTIFIED_EXIT = re.compile(r"\bexit code (-?\d+)\)?\s*\Z")  # "… (exit code 1)", "… failed with exit code 1"
# 2.1's word that a background task ended, handed to the agent as a user turn of its own
_NOTICE = re.compile(r"\A<task-notification>\n(.*?)\n</task-notification>", re.S)
_NOTICE_FIELD = re.compile(r"^<(task-id|status|summary)>(.*?)</\1>$", re.M)  # one line each
_SESSION = re.compile(r'"sessionId"\s*:\s*"')
_RECORD = re.compile(r'"type"\s*:\s*"(?:user|assistant|summary|system|file-history-snapshot)"')
_SHAPE = re.compile(r'"(?:parentUuid|isSidechain|leafUuid)"\s*:')
_SYNTHETIC = "<synthetic>"  # the model the harness names on a reply it wrote itself (an API error)
_FILE_COPIES = ("originalFile", "content", "file")  # the harness's copies of a file: the source keeps them
_HEADER_KEYS = ("cwd", "sessionId", "session_id", "version", "gitBranch")
# headless mode opens with the harness's own records: ``init``, or the session's hooks before it
# (the GitHub Action's execution file: the same records as one JSON array)
_STREAM = re.compile(r'\A\s*\[?\s*\{\s*"type"\s*:\s*"system"\s*,\s*"subtype"\s*:\s*"')
_INIT_KEYS = ("cwd", "session_id", "model", "claude_code_version", "permissionMode", "tools", "mcp_servers")
_RESULT_KEYS = ("subtype", "is_error", "num_turns", "duration_ms", "total_cost_usd", "permission_denials")


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
        subagents = subagent_files(path)
        digest = file_digest(path)
        if subagents:  # the trace is the session with its subagents: its id changes with any of them
            digests = [digest, *(file_digest(p) for p in subagents.values())]
            digest = hashlib.sha256("".join(digests).encode()).hexdigest()
        header = file_header(
            path,
            "claude-code",
            "Claude Code",
            digest,
            subagent_files=[str(p.relative_to(path.parent)) for p in subagents.values()],
        )
        yield ImportedTrace(
            importer=self.name,
            header=header,
            steps=lambda facts: _Session(path, dict(subagents), facts).steps(),
        )


class ClaudeCodeStreamImporter:
    name = "claude-code-stream"
    description = (
        "Claude Code headless output (claude -p --output-format stream-json, or the GitHub Action's"
        " execution file), one trace per file"
    )

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if _STREAM.match(text) and '"session_id"' in text and not _SESSION.search(text):
            return "JSON lines (or an array) opened by system records with a session_id (Claude Code stream-json)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        yield ImportedTrace(
            importer=self.name,
            header=file_header(path, "claude-code", "Claude Code (headless)"),
            steps=lambda facts: _Session(path, {}, facts, _refused(path)).steps(),
        )


def reminder(content: str) -> tuple[int, str] | None:
    """The harness's reminder appended to a file it read: a block that opens a line (every line of
    the file itself is numbered, ``   12→``, so a file cannot forge one) and ends the result, with
    only blank space after it. Returns where the result's own text ends (before the blank lines
    leading to the block) and the block; the first such opening that the final closing tag closes.
    Found with ``str`` searches, so a result of many blank lines costs one pass, not one per line."""
    body = content.rstrip()
    if not body.endswith(_CLOSE):
        return None
    close = len(body) - len(_CLOSE)
    at = content.find(_OPEN)
    while at != -1 and at + len(_OPEN) <= close:
        if at == 0 or content[at - 1] == "\n":
            start = len(content[:at].rstrip("\n"))
            return start, body[at:]
        at = content.find(_OPEN, at + 1)
    return None


def _refused(path: Path) -> frozenset[str]:
    """The calls a headless run's ``result`` lists as denied permission (``permission_denials``):
    it comes last, after the results it explains, so it is read first."""
    refused: set[str] = set()
    for _, record in _records(path, b'"permission_denials"'):
        denials = record.get("permission_denials") if record.get("type") == "result" else None
        for d in denials if isinstance(denials, list) else []:
            if isinstance(d, dict) and isinstance(d.get("tool_use_id"), str):
                refused.add(d["tool_use_id"])
    return frozenset(refused)


def _records(path: Path, holding: bytes | None = None) -> Iterator[tuple[Loc, dict[str, Any]]]:
    """A file's records in order, each with where it stands: JSON lines (a transcript, a headless
    stream), or one JSON array of them (the execution file of the Claude Code GitHub Action);
    ``holding``: only the lines holding those bytes (a quick pass over JSON lines)."""
    where = str(path)
    with path.open("rb") as stream:
        if stream.read(64).lstrip()[:1] == b"[":
            stream.seek(0)
            reader = JsonReader(stream, where)
            for n, record in enumerate(reader.array()):
                yield Loc(where, f"[{n}]."), _checked(record, Loc(where, f"[{n}]."))
            reader.end()
            return
        stream.seek(0)
        for line, offset, raw in bounded_lines(stream, where):
            if raw.strip() and (holding is None or holding in raw):
                record = json_line(
                    raw, where, line, offset, "a Claude Code file holds one JSON object per line"
                )
                yield Loc(where, "", line), _checked(record, Loc(where, "", line))


def subagent_files(path: Path) -> dict[str, Path]:
    """The files of a session's subagents (2.x ``<session>/subagents/agent-*.jsonl``, 2.0
    ``agent-*.jsonl`` beside it naming the session), by the prompt that opens each."""
    folder = path.parent / path.stem / "subagents"
    found = sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []
    if not path.name.startswith("agent-"):
        found += sorted(p for p in path.parent.glob("agent-*.jsonl") if p != path)
    out: dict[str, Path] = {}
    for candidate in found:
        first = _first_turn(candidate)
        if first is not None and first.get("sessionId") == path.stem and first.get("isSidechain"):
            content = first["message"].get("content")
            out.setdefault(content if isinstance(content, str) else json.dumps(content), candidate)
    return out


def read_with_session(path: Path) -> bool:
    """Whether a file is a subagent's conversation that its session's file, beside it, reads in
    (a folder walked whole reviews the session once, not each subagent again)."""
    if not (path.name.startswith("agent-") and path.suffix == ".jsonl"):
        return False
    if path.parent.name == "subagents" and path.parent.parent.with_suffix(".jsonl").is_file():
        return True
    try:
        first = _first_turn(path)
    except InputError:
        return False  # not a session's file: read (and refused) on its own
    session = first.get("sessionId") if first is not None else None
    return isinstance(session, str) and (path.parent / f"{session}.jsonl").is_file()


def _first_turn(path: Path) -> dict[str, Any] | None:
    """A file's first user or assistant record, None when it has none or is no JSON lines."""
    for _, record in _records(path):
        if record.get("type") in _TURNS and isinstance(record.get("message"), dict):
            return record
    return None


class _Session:
    """One pass over a session file and its subagents' files: the records in order, with the calls
    that delegated so far."""

    def __init__(
        self, path: Path, subagents: dict[str, Path], facts: Facts, refused: frozenset[str] = frozenset()
    ) -> None:
        self.path = path
        self.refused = refused  # the calls the harness would not let run
        self.pending = subagents  # the subagents' files no call has opened yet, by their prompt
        self.facts = facts
        self.b = StepBuilder(str(path))
        self.tools: dict[str, str] = {}  # call id -> tool name
        self.background: dict[str, str] = {}  # a background command's task id -> the call that started it
        self.reads: dict[str, str] = {}  # a call that may read a background command's output -> its task id
        self.stops: dict[str, str] = {}  # a call that stopped a background command -> its task id
        self.subagents: dict[str, str] = {}  # agentId or delegating call id -> actor
        self.prompts: dict[str, str] = {}  # a delegating call's prompt -> its subagent type
        self.delegations: dict[str, str] = {}  # a delegating call's id -> its subagent type
        self.end: tuple[str, str, dict[str, Any]] | None = None  # a headless run's error result
        self.task_seen = False
        self.notes: list[ChatMessage] = []  # the harness's reminders split off the last record's results

    def steps(self) -> Iterator[TraceStep]:
        yield from chat_steps(self._all(), self.b)
        if self.end is not None:
            yield harness_exit(self.b, *self.end)

    def _all(self) -> Iterator[ChatMessage]:
        yield from self._messages(self.path)
        while self.pending:  # a subagent no call opened: after the session's own steps
            yield from self._messages(self.pending.pop(next(iter(self.pending))))

    def _messages(self, path: Path) -> Iterator[ChatMessage]:
        for loc, record in _records(path):
            kind = record.get("type")
            if kind not in _TURNS or not isinstance(record.get("message"), dict):
                if (hook := self._bookkeeping(record, loc)) is not None:
                    yield hook
                continue
            message = self._message(record, loc, path)
            yield message
            yield from self.notes
            self.notes.clear()
            for call in message.parts:  # a delegation: the subagent's work follows its call
                args = call.arguments if isinstance(call, Call) and call.name in DELEGATING else None
                prompt = args.get("prompt") if isinstance(args, dict) else None
                if isinstance(prompt, str) and prompt in self.pending:
                    yield from self._messages(self.pending.pop(prompt))

    def _message(self, record: dict[str, Any], loc: Loc, path: Path) -> ChatMessage:
        m = role_message(record["message"], loc.line or 0, loc, at="message")
        self._header(record)
        model = record["message"].get("model")
        if m.role == "assistant" and isinstance(model, str) and model != _SYNTHETIC:
            models = self.facts.metadata.setdefault("models", [])
            if model not in models:
                models.append(model)
        subagent = self._subagent(record, m)
        ended: dict[str, Any] = {}  # a background command's end the harness tells of
        if m.role == "assistant" and model == _SYNTHETIC:
            name, role = HARNESS, "system"  # words the harness wrote in the model's place
        elif m.role == "assistant":
            name, role = subagent or MAIN, "assistant"
            for call in m.parts:
                if isinstance(call, Call) and isinstance(call.call_id, str):
                    self._called(call.call_id, call.name, call.arguments)
        elif any(isinstance(p, Result) for p in m.parts):
            name, role = None, "user"
            m.parts = [self._result(p, record) if isinstance(p, Result) else p for p in m.parts]
        elif record.get("isMeta") or record.get("isCompactSummary") or record.get("isSynthetic"):
            name, role = HARNESS, "system"
        elif (notice := _NOTICE.match(_text_of(m))) is not None:
            name, role = HARNESS, "system"  # the harness's word that a background task ended
            fields = dict(_NOTICE_FIELD.findall(notice.group(1)))
            ended = self._notified(fields.get("task-id"), fields.get("summary", ""))
        elif subagent is not None:
            name, role = MAIN, "assistant"  # the delegating agent's prompt to its subagent
        else:
            name, role = None, "user"
            if not self.task_seen and (text := _text_of(m)):
                self.facts.task, self.task_seen = text, True
        raw = pack_raw(
            file=str(path.relative_to(self.path.parent)) if path != self.path else None,
            **_place(loc),
            type=record.get("type"),
            uuid=record.get("uuid"),
            parentUuid=record.get("parentUuid"),
            isSidechain=record.get("isSidechain") or None,
            parent_tool_use_id=record.get("parent_tool_use_id"),
            agentId=record.get("agentId"),
            isMeta=record.get("isMeta"),
            message={k: v for k, v in record["message"].items() if k not in ("role", "content")},
        )
        if ended:
            raw |= ended | exit_marks(ended["exit_code"])
        return replace(m, index=None, role=role, name=name, raw=raw, timestamp=record.get("timestamp"))

    def _notified(self, task: Any, summary: str, started: Any = None) -> dict[str, Any]:
        """The harness's word that a background command ended (``task_notification``, 2.1's
        ``<task-notification>`` turn): the end of the call that started it (``output_of``) with the
        exit code its summary ends with, for a command the agent did not stop; nothing else is."""
        call = self.background.get(task) if isinstance(task, str) else None
        if call is None or task in self.stops.values() or started not in (None, call):
            return {}
        code = _NOTIFIED_EXIT.search(summary)
        return {"output_of": call, "exit_code": int(code.group(1))} if code else {}

    def _bookkeeping(self, record: dict[str, Any], loc: Loc) -> ChatMessage | None:
        """A record that is no turn: counted; a headless run's ``init`` gives the header, its
        ``result`` the run's end (an error or a cut-off run is the harness's end record), and what
        a hook it ran handed the agent (``hook_response``), or its word that a background task
        ended (``task_notification``: a command's exit code, a subagent's summary), is the harness
        speaking."""
        kind = record.get("type")
        self.facts.count(f"record:{kind}")
        subtype = record.get("subtype")
        if kind == "system" and subtype in ("hook_response", "task_notification"):
            said = record.get("output") or record.get("stdout") or record.get("summary")
            if isinstance(said, str) and said.strip():
                started = record.get("tool_use_id")  # the call that started it
                ended = self._notified(record.get("task_id"), said, started) if started else {}
                raw = pack_raw(
                    **_place(loc),
                    type=kind,
                    subtype=subtype,
                    hook_name=record.get("hook_name"),
                    tool_use_id=started,
                    status=record.get("status"),
                )
                if ended:  # a background command's end, which its exit code shows
                    raw |= ended | exit_marks(ended["exit_code"])
                return ChatMessage(
                    None, "system", HARNESS, [Text(said)], raw, timestamp=record.get("timestamp")
                )
        if kind == "system" and subtype == "init":
            self.facts.metadata.update(pack_raw(**{k: record.get(k) for k in _INIT_KEYS}))
        elif kind == "result":
            self.facts.metadata["result"] = pack_raw(**{k: record.get(k) for k in _RESULT_KEYS})
            if record.get("is_error") is True or (isinstance(subtype, str) and subtype != "success"):
                said = record.get("result")
                self.end = (
                    str(subtype),
                    said if isinstance(said, str) and said else str(subtype),
                    pack_raw(**_place(loc)),
                )
        return None

    def _called(self, call_id: str, name: str, arguments: Any) -> None:
        args = arguments if isinstance(arguments, dict) else {}
        self.tools[call_id] = name
        path, shell = args.get("file_path"), args.get("bash_id")
        if name == "Read" and isinstance(path, str) and path.endswith(".output"):  # ``<task id>.output``
            self.reads[call_id] = path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".output")
        elif name == "BashOutput" and isinstance(shell, str):
            self.reads[call_id] = shell
        elif name == "TaskOutput" and isinstance(args.get("task_id"), str):  # 2.1's read of a task
            self.reads[call_id] = args["task_id"]
        elif name in ("KillShell", "TaskStop"):  # 2.0's ``shell_id``, 2.1's ``task_id``
            task = args.get("shell_id", args.get("task_id"))
            if isinstance(task, str):
                self.stops[call_id] = task
        if name in DELEGATING:
            kind = str(args.get("subagent_type") or "subagent")
            self.delegations[call_id] = kind
            if isinstance(args.get("prompt"), str):
                self.prompts[args["prompt"]] = kind

    def _subagent(self, record: dict[str, Any], m: ChatMessage) -> str | None:
        """The subagent a record belongs to (None: the main agent's conversation): a transcript
        marks its records ``isSidechain``, a headless stream names the delegating call
        (``parent_tool_use_id``)."""
        parent = record.get("parent_tool_use_id")
        if isinstance(parent, str) and parent:
            if parent not in self.subagents:
                kind = self.delegations.get(parent, "subagent")
                self.subagents[parent] = f"{kind}:{parent.removeprefix('toolu_')[:6]}"
            return self.subagents[parent]
        if not record.get("isSidechain"):
            return None
        key = str(record.get("agentId") or record.get("sessionId") or "")
        if key not in self.subagents:
            kind = self.prompts.get(_text_of(m), "subagent")
            self.subagents[key] = f"{kind}:{key[:6]}" if key else kind
        return self.subagents[key]

    def _result(self, result: Result, record: dict[str, Any]) -> Result:
        """A tool result with the harness's account of it and, for a shell command, its exit code."""
        tool = self.tools.get(str(result.call_id), "")
        raw = dict(result.raw)
        note = reminder(result.content) if tool == "Read" else None
        if note is not None:
            self.notes.append(
                ChatMessage(
                    None,
                    "system",
                    HARNESS,
                    [Text(note[1])],
                    pack_raw(appended_to=result.call_id),
                    timestamp=record.get("timestamp"),
                )
            )
            result = replace(result, content=result.content[: note[0]])
        raw.setdefault("status", "ok")  # the harness flags every failed result (is_error): none here
        if isinstance(result.call_id, str) and result.call_id in self.refused:
            raw |= {"status": "error", "error_type": REFUSED}
        account = record.get("toolUseResult", record.get("tool_use_result"))  # transcript, stream
        if isinstance(account, dict):
            raw["tool_use_result"] = {k: v for k, v in account.items() if k not in _FILE_COPIES}
        elif account is not None:
            raw["tool_use_result"] = account
        task = account.get("backgroundTaskId") if isinstance(account, dict) else None
        if tool == "Bash" and isinstance(task, str) and task:  # started, not ended: no exit code yet
            raw["background_task"] = task
            self.background[task] = str(result.call_id)
        elif tool == "Bash":
            if raw.get("status") == "error" and (code := _EXIT.match(result.content)):
                raw["exit_code"] = int(code.group(1))
            elif raw.get("status") == "ok":
                raw["exit_code"] = 0
            if isinstance(account, dict) and account.get("interrupted") is True:
                raw["status"], raw["error_type"] = "error", "interrupted"
        elif (task := self.reads.get(str(result.call_id))) in self.background:
            raw |= self._output(task, tool, result.content, account)
        elif (task := self.stops.get(str(result.call_id))) in self.background:
            raw["stopped"] = self.background[task]  # the end the agent gave it: no check's outcome
        return replace(result, raw=raw)

    def _output(self, task: str, tool: str, output: str, account: Any) -> dict[str, Any]:
        """A background command's output, read (a ``Read`` of its file, ``BashOutput`` or 2.1's
        ``TaskOutput``): the result of the call that started it (``output_of``) and, where it shows
        the command ended, its exit code: the file's last line, or the read's account (``exitCode``,
        ``TaskOutput``'s under ``task``; ``null`` while it runs). A non-zero code fails it, as a
        failed command's result; a command the agent stopped (``KillShell``, ``TaskStop``) ended by
        the agent's doing, with no code a check gave."""
        raw: dict[str, Any] = {"output_of": self.background[task]}
        if task in self.stops.values():
            return raw
        if tool in ("BashOutput", "TaskOutput"):  # 2.1's account holds the task: ``task.exitCode``
            held = account.get("task", account) if isinstance(account, dict) else None
            code = held.get("exitCode") if isinstance(held, dict) else None
            line = None
        else:
            end = list(_EXITED.finditer(output))
            code, line = (int(end[-1].group(2)), end[-1].group(1)) if end else (None, None)
        if isinstance(code, int) and not isinstance(code, bool):
            raw["exit_code"] = code
            if code != 0:
                raw |= pack_raw(status="error", status_message=line)
        return raw

    def _header(self, record: dict[str, Any]) -> None:
        for key in _HEADER_KEYS:
            value = record.get(key)
            if isinstance(value, str) and value and key not in self.facts.metadata:
                self.facts.metadata[key] = value


def _checked(record: Any, loc: Loc) -> dict[str, Any]:
    """A record, refused with where it stands unless its shape can be read."""
    if not isinstance(record, dict):
        place = _place(loc)
        raise InputError(
            "a record must be a JSON object", path=loc.path, line=place["line"], field=place["record"]
        )
    if not isinstance(record.get("type"), str | None):
        raise loc.error("a record's 'type' must be text", "type")
    if "message" in record and record.get("type") in _TURNS and not isinstance(record["message"], dict):
        raise loc.error("must be a JSON object", "message")
    return record


def _place(loc: Loc) -> dict[str, Any]:
    """Where a record stands: its line (JSON lines), or its place in an array (``record``, ``[n]``)."""
    return {"line": loc.line, "record": loc.base.strip(".") or None}


def _text_of(m: ChatMessage) -> str:
    return "\n".join(p.text for p in m.parts if isinstance(p, Text) and p.block is None).strip()


IMPORTER = ClaudeCodeImporter()
STREAM_IMPORTER = ClaudeCodeStreamImporter()
