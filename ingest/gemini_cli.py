"""Gemini CLI chat sessions (``~/.gemini/tmp/<project>/chats/``): one trace per file, either a JSON
object ``{sessionId, projectHash, startTime, lastUpdated, messages}`` (``session-*.json``, before
0.40), or the append-only recording that replaced it (``session-*.jsonl``; a subagent's
``<parent session>/<session>.jsonl``): its first line the header, then one record a line — a
message (an ``id``; a message written again under its id, as its tokens or tool calls arrive, is
the same message: its last copy, where it first stood), ``{"$set": {...}}`` (the header's fields;
``messages``, a checkpoint of the whole list), ``{"$rewindTo": id}`` (the user took the session
back to before that message). The CLI forgets what a rewind took back; a trace keeps it, marked
``raw.rewound``: what ran then had its effects.

The messages are the steps, in order:

- a ``user`` message: the principal's words (human ``user``; the first is the task), except the
  context the CLI opens a session with (``<session_context>``: the CLI) and the function responses
  it sends back to the model (the tool results, read from the calls they answer);
- a ``gemini`` message: the agent's (``agent``): each of its ``thoughts`` (the summary's
  ``description``, its ``subject`` in ``raw``) marked ``raw.block = "reasoning"``, then its text,
  then each of its ``toolCalls`` — a call with its ``args`` (``run_shell_command``'s ``command``;
  ``replace``'s and ``write_file``'s ``file_path`` and what they write) answered by its result:
  the ``functionResponse``'s ``output`` (or ``error``), status ``ok`` for ``success`` and
  ``error`` otherwise; a call the user cancelled ran nothing (``error_type: refused``). A shell
  result's own ``Exit Code: N`` line is its exit code (the CLI reports ``success`` for any exit);
  a write's result says whether it made the file (``created and wrote to new file``, ``Created
  new file``) or changed one that existed: ``raw.written = {path, created}``;
- any other type (``info``, ``error``, ``warning``) is the CLI speaking (``system``, actor
  ``gemini-cli``).

``sessionId``, ``projectHash``, the times, the session's kind and summary go to the header, with
the models seen. A session records no verdict on its task: no outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, pack_raw
from ingest.jsonstream import JsonReader
from ingest.textlines import bounded_lines, json_line
from schemas.trace import REFUSED, TraceStep

AGENT = "agent"
HARNESS = "gemini-cli"
_SESSION = re.compile(r'\A\s*\{\s*"sessionId"\s*:')
_EXIT = re.compile(r"(?m)^Exit Code: (-?\d+)$")  # the shell tool's own record of how the command ended
_CREATED = re.compile(r"\A(?:Successfully created and wrote to new file|Created new file): ")
_CONTEXT = "<session_context>"  # the CLI's opening message: the date, the system, the folder's files
_WRITERS = frozenset({"write_file", "replace", "edit"})
_HEADER = {
    "sessionId": "session_id",
    "projectHash": "project_hash",
    "startTime": "start_time",
    "lastUpdated": "last_updated",
    "kind": "session_kind",
    "summary": "summary",
}
_LINE_HINT = "a Gemini CLI recording (session-*.jsonl) holds one JSON object per line"


class GeminiCliImporter:
    name = "gemini-cli"
    description = "Gemini CLI chat session (JSON, or the JSON-lines recording), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if not (_SESSION.match(text) and '"projectHash"' in text):
            return None
        if _recording(text):
            return "JSON lines: a header with a sessionId and a projectHash, then messages (Gemini CLI)"
        return "a JSON object with a sessionId, a projectHash and messages (Gemini CLI)"

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "gemini-cli", "Gemini CLI")
        yield ImportedTrace(importer=self.name, header=header, steps=lambda facts: _steps(path, facts))


def _recording(text: str) -> bool:
    """Whether a file's head is the JSON-lines recording: its first line a whole object, the header
    (a session written whole on one line holds its messages)."""
    first, newline, _ = text.partition("\n")
    try:
        header = json.loads(first)
    except ValueError:
        return False
    return bool(newline) and isinstance(header, dict) and "messages" not in header


def _steps(path: Path, facts: Facts) -> Iterator[TraceStep]:
    with path.open("rb") as stream:
        recording = _recording(head_text(stream.read(65536)))
    if not recording:  # streamed as they stand: a session written whole has no responses apart
        return chat_steps(_read(_messages(path, facts), facts, {}), StepBuilder(str(path)))
    replayed = _replayed(path, facts)
    return chat_steps(_read(replayed, facts, _responses(replayed)), StepBuilder(str(path)))


def _messages(path: Path, facts: Facts) -> Iterator[tuple[dict[str, Any], Loc]]:
    """A session written whole: its header's fields, then its messages as they stand."""
    where = str(path)
    with path.open("rb") as stream:
        reader = JsonReader(stream, where)
        for key in reader.members():
            if key != "messages":
                _header(facts, {key: reader.value()})
                continue
            for n, message in enumerate(reader.array()):
                yield _checked(message, Loc(where, f"messages[{n}]."))
        reader.end()


def _replayed(path: Path, facts: Facts) -> list[tuple[dict[str, Any], Loc]]:
    """A recording's messages once every line is applied: a message's last copy where it first
    stood, a checkpoint's messages written again, a rewind marking what it took back."""
    where = str(path)
    found: dict[Any, tuple[dict[str, Any], Loc]] = {}
    rewound: set[Any] = set()
    with path.open("rb") as stream:
        for line, offset, raw in bounded_lines(stream, where):
            if not raw.strip():
                continue
            record, loc = json_line(raw, where, line, offset, _LINE_HINT), Loc(where, "", line)
            if not isinstance(record, dict):
                raise InputError("a record must be a JSON object", path=where, line=line, hint=_LINE_HINT)
            if "$set" in record:
                update = record["$set"]
                if not isinstance(update, dict):
                    raise loc.error("must be a JSON object", "$set")
                checkpoint = update.get("messages", [])
                if not isinstance(checkpoint, list):
                    raise loc.error("must be a list of messages", "$set.messages")
                for k, message in enumerate(checkpoint):
                    _keep(found, *_checked(message, Loc(where, f"$set.messages[{k}].", line)))
                _header(facts, update)
            elif "$rewindTo" in record:
                ids = list(found)
                target = record["$rewindTo"]
                if not isinstance(target, str | int):
                    raise loc.error("must be the id of a message", "$rewindTo")
                rewound.update(ids[ids.index(target) :] if target in found else ids)
            elif "id" in record:
                _keep(found, *_checked(record, loc))
            elif "sessionId" in record or "projectHash" in record:
                _header(facts, record)
            else:
                facts.count("record:" + (next(iter(record), "empty")))
    return [(m | {"$rewound": True} if key in rewound else m, loc) for key, (m, loc) in found.items()]


def _keep(found: dict[Any, tuple[dict[str, Any], Loc]], message: dict[str, Any], loc: Loc) -> None:
    """A message recorded again under its id replaces its copy where that stood."""
    key = message.get("id")
    if not isinstance(key, str | int):
        raise loc.error("a message must have an 'id'", "id")
    found[key] = (message, loc)


def _checked(message: Any, loc: Loc) -> tuple[dict[str, Any], Loc]:
    if not isinstance(message, dict):
        field = loc.base.strip(".") or None
        raise InputError("a message must be a JSON object", path=loc.path, line=loc.line, field=field)
    return message, loc


def _header(facts: Facts, fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        if key in _HEADER and isinstance(value, str):
            facts.metadata[_HEADER[key]] = value


def _responses(messages: list[tuple[dict[str, Any], Loc]]) -> dict[Any, list[Any]]:
    """The function responses the CLI sent back to the model (``user`` records), by call id: they
    answer the calls whose recorded result is missing."""
    return {
        part["functionResponse"].get("id"): [part]
        for message, _ in messages
        if message.get("type") == "user" and isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict)
        and isinstance(part.get("functionResponse"), dict)
        and isinstance(part["functionResponse"].get("id"), str | int)
    }


def _read(
    found: Iterable[tuple[dict[str, Any], Loc]], facts: Facts, responses: dict[Any, list[Any]]
) -> Iterator[ChatMessage]:
    """The chat messages of a session's messages."""
    for message, loc in found:
        yield from _message(message, loc, facts, responses)


def _message(
    message: dict[str, Any], loc: Loc, facts: Facts, responses: dict[Any, list[Any]]
) -> Iterator[ChatMessage]:
    kind, stamp = message.get("type"), message.get("timestamp")
    stamp = stamp if isinstance(stamp, str) else None
    content = message.get("content", "")
    text = content
    if isinstance(content, list):  # parts, as the API holds them
        text = "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if not isinstance(text, str):
        raise loc.error("a message's content must be text", "content")
    place = loc.base.strip(".") or None
    raw = pack_raw(
        message=place, line=loc.line, id=message.get("id"), type=kind, rewound=message.get("$rewound")
    )
    if kind == "user" and _responses_only(content):
        facts.count("record:function_responses")  # the tool results, read with their calls
        return
    if kind == "user" and not text.lstrip().startswith(_CONTEXT):
        if facts.task is None and text.strip():
            facts.task = text
        yield ChatMessage(None, "user", None, [Text(text)], raw, timestamp=stamp)
        return
    if kind != "gemini":
        yield ChatMessage(None, "system", HARNESS, [Text(text)], raw, timestamp=stamp)
        return
    if isinstance(message.get("model"), str):
        models = facts.metadata.setdefault("models", [])
        if message["model"] not in models:
            models.append(message["model"])
    thoughts = message.get("thoughts") if isinstance(message.get("thoughts"), list) else []
    parts: list[Text | Call] = [
        Text(t["description"], block="reasoning", raw=pack_raw(subject=t.get("subject")))
        for t in thoughts
        if isinstance(t, dict) and isinstance(t.get("description"), str) and t["description"].strip()
    ]
    if text.strip():
        parts.append(Text(text))
    calls = message.get("toolCalls", [])
    if not isinstance(calls, list):
        raise loc.error("toolCalls must be a list", "toolCalls")
    results = []
    for k, call in enumerate(calls):
        field = f"toolCalls[{k}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise loc.error("a tool call must be an object with a 'name'", field)
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        parts.append(Call(call["name"], args, call.get("id"), ""))
        if "result" not in call and isinstance(call.get("id"), str | int) and call["id"] in responses:
            call = call | {"result": responses[call["id"]]}
        results.append(_result(call, args, loc, field))
    if parts:
        yield ChatMessage(None, "assistant", AGENT, parts, raw, timestamp=stamp)
    for result in results:
        yield ChatMessage(None, "tool", None, [result], raw, timestamp=stamp)


def _responses_only(content: Any) -> bool:
    """Whether a ``user`` message is the function responses the CLI sent back, and nothing else."""
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(p, dict) and "functionResponse" in p for p in content)
    )


def _result(call: dict[str, Any], args: dict[str, Any], loc: Loc, field: str) -> Result:
    """A call's result: its function responses' output (or error), status and exit code."""
    texts, failed = [], False
    parts = call.get("result") or []
    if not isinstance(parts, list):
        raise loc.error("a call's result must be a list", f"{field}.result")
    for part in parts:
        function = part.get("functionResponse") if isinstance(part, dict) else None
        response = function.get("response") if isinstance(function, dict) else None
        if not isinstance(response, dict):
            raise loc.error("a result must hold a functionResponse", f"{field}.result")
        said = response.get("output", response.get("error"))
        failed = failed or "error" in response
        if isinstance(said, str):
            texts.append(said)
    content, status = "\n".join(texts), call.get("status")
    raw: dict[str, Any] = {"status": "error" if failed or status not in ("success", None) else "ok"}
    if status == "cancelled":  # the user stopped it before it ran
        raw["error_type"] = REFUSED
    if call["name"] == "run_shell_command" and (code := _EXIT.search(content)):
        raw |= exit_marks(int(code.group(1)))
    path = args.get("file_path")
    if call["name"] in _WRITERS and raw["status"] == "ok" and isinstance(path, str):
        raw["written"] = {"path": path, "created": bool(_CREATED.match(content))}
    return Result(content, call.get("id"), call["name"], raw)


IMPORTER = GeminiCliImporter()
