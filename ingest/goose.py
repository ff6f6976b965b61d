"""Goose sessions (block/goose, the open-source agent): its session store, ``sessions.db`` (SQLite,
``~/.local/share/goose/sessions/``, where Goose keeps every session since it left one JSONL file a
session), read as one trace per session.

- A ``sessions`` row is a trace's header: its id, name and description, ``working_dir``, when it
  was created, the provider and model (``model_config_json``'s ``model_name``), the mode, the
  tokens and cost counted, the extensions enabled, and the session it was started from
  (``parent_session_id``: a subagent's session is a trace of its own).
- Its ``messages`` rows, in the order written, hold a ``role`` and ``content_json``, a list of
  parts:
  - ``text``: the principal's words (human ``user``) or the agent's; a user message Goose wrote
    and hid from the person (``metadata_json``'s ``userVisible`` false: the ``<turn-context>`` it
    adds to each turn) is the harness speaking (``system`` actor ``goose``); one the agent never
    saw (``agentVisible`` false) is counted, not a step;
  - ``thinking``: the agent's reasoning (``raw.block``); ``redactedThinking`` is counted;
  - ``toolRequest``: a tool call, ``toolCall.value``'s ``name`` (``shell``, ``text_editor``, or an
    extension's ``<extension>__<tool>``) with its ``arguments``; a request Goose could not read
    (``toolCall.status`` ``error``) is its notice (``system``) with the error;
  - ``toolResponse``: the result of the call ``id`` names: the texts of ``toolResult.value``'s
    ``content`` verbatim (an older Goose wrote the content list itself), ``isError`` its status,
    the shell's ``structuredContent.exit_code`` its exit code; a tool that did not run
    (``toolResult.status`` ``error``) fails with Goose's error text;
  - any other part (an image, a confirmation request, a notification) is counted.

Goose records no verdict on a session's task: no outcome.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder
from ingest.chat_message import Call, ChatMessage, Result, Text
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import exit_marks, pack_raw
from schemas.trace import TraceHeader, TraceStep

AGENT = "agent"
HARNESS = "goose"
_SQLITE = b"SQLite format 3\x00"
_SESSION_KEYS = ("name", "description", "working_dir", "created_at", "session_type", "goose_mode")
_SPENT_KEYS = ("total_tokens", "input_tokens", "output_tokens", "accumulated_cost")
_HINT = "give the sessions.db Goose keeps (~/.local/share/goose/sessions/sessions.db)"


class GooseImporter:
    name = "goose"
    description = "Goose sessions: the session store sessions.db (SQLite), one trace per session"

    def detect(self, path: Path, head: bytes) -> str | None:
        if head.startswith(_SQLITE) and b"CREATE TABLE sessions" in head and b"content_json" in head:
            return "an SQLite database with Goose's sessions and messages tables (sessions.db)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        with closing(_connect(path)) as db:
            sessions = _query(db, path, "SELECT * FROM sessions ORDER BY created_at, id")
            for session in sessions:
                header = _header(db, path, session)
                sid = session["id"]
                yield ImportedTrace(
                    importer=self.name,
                    header=header,
                    steps=lambda facts, sid=sid: _Session(path, sid, facts).steps(),
                )


def _connect(path: Path) -> sqlite3.Connection:
    """The database, read-only."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.Error as exc:
        raise _unread(path, exc) from exc
    return db


def _query(db: sqlite3.Connection, path: Path, sql: str, *args: Any) -> list[sqlite3.Row]:
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.Error as exc:
        raise _unread(path, exc) from exc


def _unread(path: Path, exc: sqlite3.Error) -> InputError:
    """Why SQLite could not read the file: no database, a damaged one, or another database."""
    if isinstance(exc, sqlite3.OperationalError) and "no such" in str(exc):  # a table or column
        return InputError(f"not Goose's session store ({exc})", path=str(path), hint=_HINT)
    return InputError(
        f"the database is damaged or cut short, or no database at all (SQLite: {exc})",
        path=str(path),
        hint=f"{_HINT}; copy it while Goose is not writing to it",
    )


def _header(db: sqlite3.Connection, path: Path, session: sqlite3.Row) -> TraceHeader:
    """The session's header; its id digests the session's id and messages, so that it stays the
    same while Goose adds other sessions to the file."""
    sid = str(session["id"])
    digest = hashlib.sha256(sid.encode())
    for row in _query(db, path, _MESSAGES, sid):
        digest.update(f"\0{row['id']}\0{row['role']}\0{row['content_json']}".encode())
    keys = session.keys()
    metadata = pack_raw(
        session_id=sid,
        **{k: session[k] for k in _SESSION_KEYS if k in keys},
        **{k: session[k] for k in _SPENT_KEYS if k in keys},
        provider=session["provider_name"] if "provider_name" in keys else None,
        model=_json_field(session, "model_config_json", "model_name"),
        extensions=_extensions(session),
        parent_session_id=session["parent_session_id"] if "parent_session_id" in keys else None,
        source_sha256=digest.hexdigest(),
    )
    return TraceHeader(
        trace_id=f"goose-{digest.hexdigest()[:16]}", source=str(path), framework="Goose", metadata=metadata
    )


_MESSAGES = "SELECT * FROM messages WHERE session_id = ? ORDER BY id"


def _json_field(row: sqlite3.Row, column: str, key: str) -> Any:
    """A key of a JSON column, None where the column is absent, empty or not an object."""
    text = row[column] if column in row.keys() else None  # noqa: SIM118 (a Row's `in` reads its values)
    try:
        value = json.loads(text) if text else None
    except (TypeError, ValueError):
        return None
    return value.get(key) if isinstance(value, dict) else None


def _extensions(session: sqlite3.Row) -> list[str]:
    enabled = _json_field(session, "extension_data", "enabled_extensions.v0")
    listed = enabled.get("extensions") if isinstance(enabled, dict) else None
    return [e["name"] for e in listed or [] if isinstance(e, dict) and isinstance(e.get("name"), str)]


class _Session:
    def __init__(self, path: Path, session_id: str, facts: Facts) -> None:
        self.path, self.session_id, self.facts = path, session_id, facts
        self.where = str(path)
        self.b = StepBuilder(self.where)

    def steps(self) -> Iterator[TraceStep]:
        yield from chat_steps(self._messages(), self.b)

    def _messages(self) -> Iterator[ChatMessage]:
        with closing(_connect(self.path)) as db:
            for row in _query(db, self.path, _MESSAGES, self.session_id):
                yield from self._message(row)

    def _message(self, row: sqlite3.Row) -> Iterator[ChatMessage]:
        at = f"messages[id={row['id']}]"
        parts = _loaded(row["content_json"], self.where, f"{at}.content_json")
        shown = (
            _loaded(row["metadata_json"], self.where, f"{at}.metadata_json") if row["metadata_json"] else {}
        )
        if not isinstance(parts, list) or not isinstance(shown, dict):
            raise InputError(
                "content_json must be a list of parts, metadata_json an object", path=self.where, field=at
            )
        if shown.get("agentVisible") is False:
            self.facts.count("message:not shown to the agent")
            return
        role = row["role"]
        stamp = row["created_timestamp"]
        when = datetime.fromtimestamp(stamp, UTC).isoformat() if isinstance(stamp, int) else None
        raw = pack_raw(message_id=row["message_id"], row=row["id"])
        for k, part in enumerate(parts):
            if not isinstance(part, dict):
                raise InputError(
                    "a part must be a JSON object", path=self.where, field=f"{at}.content_json[{k}]"
                )
            message = self._part(part, role, shown, raw, f"{at}.content_json[{k}]")
            if message is not None:
                message.timestamp = when
                yield message

    def _part(
        self, part: dict[str, Any], role: str, shown: dict[str, Any], raw: dict[str, Any], at: str
    ) -> ChatMessage | None:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            text = part["text"]
            if role == "assistant":
                return ChatMessage(None, "assistant", AGENT, [Text(text)], raw)
            if shown.get("userVisible") is False:  # Goose's own words to the agent (turn context)
                return ChatMessage(None, "system", HARNESS, [Text(text)], raw)
            if self.facts.task is None and text.strip():
                self.facts.task = text
            return ChatMessage(None, "user", None, [Text(text)], raw)
        if kind == "thinking" and isinstance(part.get("thinking"), str):
            return ChatMessage(None, "assistant", AGENT, [Text(part["thinking"], block="thinking")], raw)
        if kind in ("toolRequest", "toolResponse") and not isinstance(part.get("id"), str):
            raise InputError(
                f"a {kind} must name its call by its 'id' (text)", path=self.where, field=f"{at}.id"
            )
        if kind == "toolRequest":
            return self._request(part, raw, at)
        if kind == "toolResponse":
            return ChatMessage(None, "tool", None, [_response(part, self.where, at)], raw)
        self.facts.count(f"part:{kind}")
        return None

    def _request(self, part: dict[str, Any], raw: dict[str, Any], at: str) -> ChatMessage:
        call = part.get("toolCall") if isinstance(part.get("toolCall"), dict) else {}
        value = call.get("value")
        if call.get("status") == "success" and isinstance(value, dict) and isinstance(value.get("name"), str):
            args = value.get("arguments") if isinstance(value.get("arguments"), dict) else {}
            return ChatMessage(None, "assistant", AGENT, [Call(value["name"], args, part.get("id"), "")], raw)
        said = call.get("error") if isinstance(call.get("error"), str) else None
        if said is None:
            raise InputError(
                "a toolRequest must hold its toolCall's value or error", path=self.where, field=at
            )
        return ChatMessage(None, "system", HARNESS, [Text(said)], raw | {"error_type": "invalid_tool_call"})


def _response(part: dict[str, Any], where: str, at: str) -> Result:
    """A tool's answer: the texts of its content, its error flag, the shell's exit code."""
    result = part.get("toolResult") if isinstance(part.get("toolResult"), dict) else {}
    if result.get("status") == "error" and isinstance(result.get("error"), str):
        return Result(result["error"], part.get("id"), None, {"status": "error"})
    value = result.get("value")
    answer = value if isinstance(value, dict) else {"content": value}
    content = answer.get("content")
    if result.get("status") != "success" or not isinstance(content, list):
        raise InputError("a toolResponse must hold its toolResult's content or error", path=where, field=at)
    said = "\n".join(c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str))
    structured = answer.get("structuredContent") if isinstance(answer.get("structuredContent"), dict) else {}
    raw = {"status": "error" if answer.get("isError") is True else "ok"} | exit_marks(
        structured.get("exit_code")
    )
    return Result(said, part.get("id"), None, raw)


def _loaded(text: Any, where: str, field: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InputError(f"not JSON: {exc}", path=where, field=field) from exc


IMPORTER = GooseImporter()
