"""Gemini CLI chat sessions (``~/.gemini/tmp/<project>/chats/session-*.json``): one trace per file,
a JSON object ``{sessionId, projectHash, startTime, lastUpdated, messages}``.

The messages are the steps, in order:

- a ``user`` message: the principal's words (human ``user``; the first is the task);
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

``sessionId``, ``projectHash`` and the times go to the header, with the models seen. A session
records no verdict on its task: no outcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import pack_raw
from ingest.jsonstream import JsonReader
from schemas.trace import REFUSED, TraceStep

AGENT = "agent"
HARNESS = "gemini-cli"
_SESSION = re.compile(r'\A\s*\{\s*"sessionId"\s*:')
_EXIT = re.compile(r"(?m)^Exit Code: (-?\d+)$")  # the shell tool's own record of how the command ended
_CREATED = re.compile(r"\A(?:Successfully created and wrote to new file|Created new file): ")
_WRITERS = frozenset({"write_file", "replace", "edit"})
_HEADER = {
    "sessionId": "session_id",
    "projectHash": "project_hash",
    "startTime": "start_time",
    "lastUpdated": "last_updated",
}


class GeminiCliImporter:
    name = "gemini-cli"
    description = "Gemini CLI chat session (JSON), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if _SESSION.match(text) and '"projectHash"' in text:
            return "a JSON object with a sessionId, a projectHash and messages (Gemini CLI)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "gemini-cli", "Gemini CLI")
        yield ImportedTrace(importer=self.name, header=header, steps=lambda facts: _steps(path, facts))


def _steps(path: Path, facts: Facts) -> Iterator[TraceStep]:
    return chat_steps(_messages(path, facts), StepBuilder(str(path)))


def _messages(path: Path, facts: Facts) -> Iterator[ChatMessage]:
    where = str(path)
    with path.open("rb") as stream:
        reader = JsonReader(stream, where)
        for key in reader.members():
            if key != "messages":
                value = reader.value()
                if key in _HEADER and isinstance(value, str):
                    facts.metadata[_HEADER[key]] = value
                continue
            for n, message in enumerate(reader.array()):
                at = f"messages[{n}]"
                if not isinstance(message, dict):
                    raise InputError("a message must be a JSON object", path=where, field=at)
                yield from _message(message, at, where, facts)
        reader.end()


def _message(message: dict[str, Any], at: str, where: str, facts: Facts) -> Iterator[ChatMessage]:
    kind, stamp = message.get("type"), message.get("timestamp")
    stamp = stamp if isinstance(stamp, str) else None
    text = message.get("content", "")
    if isinstance(text, list):  # parts, as the API holds them
        text = "\n".join(p["text"] for p in text if isinstance(p, dict) and isinstance(p.get("text"), str))
    if not isinstance(text, str):
        raise InputError("a message's content must be text", path=where, field=f"{at}.content")
    raw = pack_raw(message=at, id=message.get("id"), type=kind)
    if kind == "user":
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
        raise InputError("toolCalls must be a list", path=where, field=f"{at}.toolCalls")
    results = []
    for k, call in enumerate(calls):
        field = f"{at}.toolCalls[{k}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise InputError("a tool call must be an object with a 'name'", path=where, field=field)
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        parts.append(Call(call["name"], args, call.get("id"), ""))
        results.append(_result(call, args, field, where))
    if parts:
        yield ChatMessage(None, "assistant", AGENT, parts, raw, timestamp=stamp)
    for result in results:
        yield ChatMessage(None, "tool", None, [result], raw, timestamp=stamp)


def _result(call: dict[str, Any], args: dict[str, Any], field: str, where: str) -> Result:
    """A call's result: its function responses' output (or error), status and exit code."""
    texts, failed = [], False
    parts = call.get("result") or []
    if not isinstance(parts, list):
        raise InputError("a call's result must be a list", path=where, field=f"{field}.result")
    for part in parts:
        function = part.get("functionResponse") if isinstance(part, dict) else None
        response = function.get("response") if isinstance(function, dict) else None
        if not isinstance(response, dict):
            raise InputError("a result must hold a functionResponse", path=where, field=f"{field}.result")
        said = response.get("output", response.get("error"))
        failed = failed or "error" in response
        if isinstance(said, str):
            texts.append(said)
    content, status = "\n".join(texts), call.get("status")
    raw: dict[str, Any] = {"status": "error" if failed or status not in ("success", None) else "ok"}
    if status == "cancelled":  # the user stopped it before it ran
        raw["error_type"] = REFUSED
    if call["name"] == "run_shell_command" and (code := _EXIT.search(content)):
        raw["exit_code"] = int(code.group(1))
        if raw["exit_code"]:
            raw |= {"status": "error", "error_type": "exit_code"}
    path = args.get("file_path")
    if call["name"] in _WRITERS and raw["status"] == "ok" and isinstance(path, str):
        raw["written"] = {"path": path, "created": bool(_CREATED.match(content))}
    return Result(content, call.get("id"), call["name"], raw)


IMPORTER = GeminiCliImporter()
