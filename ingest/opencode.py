"""OpenCode sessions (the open-source coding agent, ``opencode``): one trace per file, in either form
a user saves —

- ``opencode run --format json``: one JSON event a line, ``{type, timestamp, sessionID, part}``:
  ``text`` (the agent's words, written once the part ended), ``reasoning``, ``tool_use`` (a tool
  part, written once the tool finished: the call and its result), ``step_start`` / ``step_finish``
  (the model's turns: their tokens and cost summed in the header), ``error`` (the session's error:
  the harness's end record). The prompt is not in the stream;
- ``opencode export <session>``: one JSON document ``{info, messages: [{info, parts}]}``: the
  session's ``info`` (id, title, directory, version) the header; each message's parts, the user's
  its text (the principal's words), the assistant's the same parts as above; an assistant
  message's ``error`` (aborted, an API error …) is the CLI's notice (``system``, actor
  ``opencode``).

A tool part is a call of its ``tool`` with ``state.input`` (``bash``'s ``command``; ``edit``'s
``filePath``, ``oldString``, ``newString``; ``write``'s ``filePath`` and ``content``), id
``callID``, answered by its ``state``: ``completed`` — its ``output`` verbatim, status ``ok``;
``bash``'s exit code is ``metadata.exit`` (a non-zero exit is still "completed": an error here); a
write says whether the file existed (``metadata.exists``), an edit changed one that did
(``raw.written``) — or ``error``, its ``error`` text, status ``error``: OpenCode's own words for a
call the user or a permission rule refused (``The user rejected permission …``, ``The user has
specified a rule which prevents …``) make it a refusal (``error_type: refused``: it ran nothing),
``Tool execution aborted`` an interruption. A part still ``pending`` or ``running`` (a session cut
off) is a call without a result. Whitespace-only text parts, step, patch, file and snapshot parts
are counted, not steps. No form records a verdict on the task: no outcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Loc, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, harness_exit, pack_raw
from ingest.jsonstream import JsonReader
from ingest.textlines import bounded_lines, json_line
from schemas.trace import REFUSED, TraceStep

AGENT = "agent"
HARNESS = "opencode"
_EVENTS = frozenset({"step_start", "text", "reasoning", "tool_use", "step_finish", "error", "done"})
_EXPORT = re.compile(r'\A\s*\{\s*"info"\s*:\s*\{\s*"id"\s*:\s*"ses_')
_EVENT = re.compile(
    r'\A\s*\{\s*"type"\s*:\s*"(?:'
    + "|".join(sorted(_EVENTS))
    + r')"\s*,\s*"timestamp"\s*:\s*\d+\s*,\s*"sessionID"\s*:'
)
_HINT = "`opencode run --format json` writes one JSON event per line"
# OpenCode's own words for a call it did not run (packages/opencode/src/permission, session/processor)
_REFUSED = re.compile(
    r"\A(?:Error: )?The user (?:rejected permission to use|has specified a rule which prevents)"
)
_ABORTED = re.compile(r"\A(?:Error: )?Tool execution aborted")
_INFO = {"id": "session_id", "title": "title", "directory": "directory", "version": "version"}


class OpenCodeImporter:
    name = "opencode"
    description = "OpenCode sessions: `opencode run --format json` events (JSONL) or `opencode export` JSON"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if _EXPORT.match(text):
            return "a JSON object whose 'info' is an OpenCode session (opencode export)"
        if _EVENT.match(text):  # read by its opening: a first event may be longer than the head
            return "JSON lines of events with a sessionID (opencode run --format json)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "opencode", "OpenCode")
        yield ImportedTrace(
            importer=self.name, header=header, steps=lambda facts: _Session(path, facts).steps()
        )


class _Session:
    def __init__(self, path: Path, facts: Facts) -> None:
        self.path, self.where, self.facts = path, str(path), facts
        self.b = StepBuilder(self.where)
        self.end: tuple[Any, str, dict[str, Any]] | None = None

    def steps(self) -> Iterator[TraceStep]:
        with self.path.open("rb") as stream:
            exported = bool(_EXPORT.match(head_text(stream.read(4096))))
        yield from chat_steps(self._exported() if exported else self._events(), self.b)
        if self.end is not None:
            yield harness_exit(self.b, *self.end)

    def _events(self) -> Iterator[ChatMessage]:
        with self.path.open("rb") as stream:
            for line, offset, raw in bounded_lines(stream, self.where):
                if not raw.strip():
                    continue
                event = json_line(raw, self.where, line, offset, _HINT)
                loc = Loc(self.where, "", line)
                if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                    raise InputError(
                        "an event must be a JSON object with a 'type'", path=self.where, line=line
                    )
                if isinstance(event.get("sessionID"), str):
                    self.facts.metadata.setdefault("session_id", event["sessionID"])
                if event["type"] == "error":
                    self.end = _error(event.get("error"), {"line": line})
                elif isinstance(event.get("part"), dict):
                    yield from self._part(event["part"], "assistant", Loc(self.where, "part.", line))
                elif event["type"] != "done":
                    raise loc.error("an event must hold its part", "part")
                else:
                    self.facts.count("event:done")

    def _exported(self) -> Iterator[ChatMessage]:
        with self.path.open("rb") as stream:
            reader = JsonReader(stream, self.where)
            for key in reader.members():
                if key != "messages":
                    value = reader.value()
                    if key == "info" and isinstance(value, dict):
                        self.facts.metadata.update(
                            {_INFO[k]: v for k, v in value.items() if k in _INFO and isinstance(v, str)}
                        )
                    continue
                for n, message in enumerate(reader.array()):
                    yield from self._message(message, Loc(self.where, f"messages[{n}]."))
            reader.end()

    def _message(self, message: Any, loc: Loc) -> Iterator[ChatMessage]:
        info = message.get("info") if isinstance(message, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(info, dict) or not isinstance(parts, list):
            raise InputError(
                "a message must be an object with its 'info' and 'parts'",
                path=loc.path,
                field=loc.base.rstrip("."),
            )
        role = info.get("role")
        if isinstance(info.get("modelID"), str):
            models = self.facts.metadata.setdefault("models", [])
            if info["modelID"] not in models:
                models.append(info["modelID"])
        for k, part in enumerate(parts):
            if not isinstance(part, dict):
                raise loc.error("a part must be a JSON object", f"parts[{k}]")
            yield from self._part(
                part, "user" if role == "user" else "assistant", Loc(loc.path, f"{loc.base}parts[{k}].")
            )
        if isinstance(info.get("error"), dict):
            _, said, raw = _error(info["error"], {"message": loc.base.rstrip(".")})
            yield ChatMessage(None, "system", HARNESS, [Text(said)], raw)

    def _part(self, part: dict[str, Any], role: str, loc: Loc) -> Iterator[ChatMessage]:
        kind = part.get("type")
        raw = pack_raw(
            line=loc.line, part=loc.base.rstrip(".") if loc.line is None else None, id=part.get("id")
        )
        if kind in ("text", "reasoning"):
            text = part.get("text")
            if not isinstance(text, str):
                raise loc.error("a text part must hold its text", "text")
            if not text.strip():
                self.facts.count(f"part:{kind} (blank)")
                return
            if role == "user":
                if self.facts.task is None:
                    self.facts.task = text
                yield ChatMessage(None, "user", None, [Text(text)], raw)
            else:
                yield ChatMessage(
                    None,
                    "assistant",
                    AGENT,
                    [Text(text, block="reasoning" if kind == "reasoning" else None)],
                    raw,
                )
        elif kind == "tool":
            yield from self._tool(part, loc, raw)
        else:
            if kind == "step-finish":
                self._spent(part)
            self.facts.count(f"part:{kind}")

    def _tool(self, part: dict[str, Any], loc: Loc, raw: dict[str, Any]) -> Iterator[ChatMessage]:
        tool, state = part.get("tool"), part.get("state")
        if not isinstance(tool, str) or not isinstance(state, dict):
            raise loc.error("a tool part must name its 'tool' and hold its 'state'", "state")
        args = state.get("input") if isinstance(state.get("input"), dict) else {}
        yield ChatMessage(None, "assistant", AGENT, [Call(tool, args, part.get("callID"), "")], raw)
        status = state.get("status")
        if status in ("completed", "error"):
            yield ChatMessage(None, "tool", None, [_result(tool, state, args, part.get("callID"))], raw)

    def _spent(self, part: dict[str, Any]) -> None:
        """A model turn's tokens and cost, summed in the header."""
        tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
        spent = {
            "cost": part.get("cost"),
            "input_tokens": tokens.get("input"),
            "output_tokens": tokens.get("output"),
        }
        for key, value in spent.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                self.facts.metadata[key] = round(self.facts.metadata.get(key, 0) + value, 9)


def _result(tool: str, state: dict[str, Any], args: dict[str, Any], call_id: Any) -> Result:
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    if state["status"] == "error":
        said = state.get("error") if isinstance(state.get("error"), str) else ""
        kind = REFUSED if _REFUSED.match(said) else "interrupted" if _ABORTED.match(said) else "error"
        return Result(said, call_id, tool, {"status": "error", "error_type": kind})
    said = state.get("output") if isinstance(state.get("output"), str) else ""
    raw: dict[str, Any] = {"status": "ok"}
    raw |= exit_marks(metadata.get("exit"))
    path = args.get("filePath")
    if tool in ("edit", "write") and isinstance(path, str):
        existed = metadata.get("exists") if tool == "write" else True
        raw["written"] = {"path": path, "created": existed is False}
    return Result(said, call_id, tool, raw)


def _error(error: Any, raw: dict[str, Any]) -> tuple[Any, str, dict[str, Any]]:
    """(its name, its message, raw) for a session's or a message's error."""
    error = error if isinstance(error, dict) else {}
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    said = data.get("message") if isinstance(data.get("message"), str) else ""
    name = error.get("name") if isinstance(error.get("name"), str) else "error"
    return name, said, raw | {"error": name}


IMPORTER = OpenCodeImporter()
