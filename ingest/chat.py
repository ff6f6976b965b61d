"""Chat-message files, the commonest shape of public agent runs: four importers, one reader.

- ``openai-chat``: a JSON object with ``messages`` (keys beside it allowed: ``reward``, ``info``,
  ``task_id``, ``tools`` …), a bare list of messages, or a list of runs (τ-bench's
  ``historical_trajectories``: ``[{"task_id", "reward", "info", "traj"}]``, one trace per run);
- ``anthropic-messages``: the same shapes holding Anthropic Messages (top-level ``system``,
  content blocks ``tool_use`` / ``tool_result`` / ``thinking``);
- ``langchain-messages``: LangChain dumps (``messages_to_dict``, ``lc: 1`` constructors, plain
  ``type`` dicts), LangGraph state (``{"messages": […]}`` or ``{"values": {"messages": […]}}``);
- ``chat-jsonl``: one run per line (``{"messages": […]}`` or a bare message list; the fine-tuning
  and evals shape), each line its own trace; errors name the line.

All four read every dialect's messages (a file mixing them still imports); the names say what
detection saw. Detection reads the head only (64 KiB): a top-level ``messages`` (or ``traj``,
``values.messages``) list whose first messages carry chat roles or LangChain message types. Keys
are found by depth, so a ``"messages"`` nested in another format's record (Inspect samples, span
attributes) is not taken for a chat file.

A JSON document is parsed whole on open (the JSONL importer reads one bounded line at a time), so a
document may be at most 256 MiB; larger runs belong in JSONL. Trace ids are the importer name, the
file's sha256 prefix, and the run's place (list index, ``L<line>``), so re-importing the same bytes
appends nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import ImportedTrace, file_digest, head_text
from ingest.chat_langchain import kind_of
from ingest.chat_runs import runs_of, trace_of
from ingest.jsonstream import JsonReader
from ingest.limits import max_document_bytes, size_text, too_large
from ingest.textlines import bounded_lines, json_line

CHAT_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}
_decoder = json.JSONDecoder()
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*("|\Z)|[{}\[\]]', re.S)
_COLON = re.compile(r"\s*:")


def _keys(text: str, max_depth: int = 4) -> tuple[list[tuple[int, str, int]], int | None]:
    """Object keys in JSON text as (depth, key, index after its colon), and the end of the first
    top-level value (None when it runs past the text)."""
    keys: list[tuple[int, str, int]] = []
    depth = 0
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token[0] == '"':
            if not m.group(1):
                break  # the head ends inside a string
            colon = _COLON.match(text, m.end())
            if colon and depth <= max_depth:
                keys.append((depth, token[1:-1], colon.end()))
        elif token in "{[":
            depth += 1
        else:
            depth -= 1
            if depth <= 0:
                return keys, m.end()
    return keys, None


def _elements(text: str, start: int, limit: int = 20) -> list[Any]:
    """The complete elements of the array that opens at ``start`` (as far as the text holds them)."""
    i = start
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if i >= len(text) or text[i] != "[":
        return []
    i += 1
    out: list[Any] = []
    while len(out) < limit:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        try:
            value, i = _decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return out
        out.append(value)
    return out


def _dialect(messages: list[Any], anthropic_system: bool) -> str | None:
    """'langchain', 'anthropic' or 'openai' from a run's first messages; None if they are not chat."""
    first = messages[0] if messages else None
    if not isinstance(first, dict):
        return None
    if kind_of(first):
        return "langchain"
    role = first.get("role")
    if not isinstance(role, str) or role not in CHAT_ROLES:
        return None
    blocks = {
        b["type"]
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and isinstance(b.get("type"), str)
    }
    return "anthropic" if anthropic_system or blocks & ANTHROPIC_BLOCKS else "openai"


def _doc_dialect(doc: Any) -> str | None:
    """The dialect of a whole (small) document or JSONL line."""
    try:
        run = runs_of(doc, "")[0]
    except (InputError, IndexError):
        return None
    system = isinstance(run.fields.get("system"), str | list)
    return _dialect(run.messages[:20], system)


def _head_dialect(text: str, keys: list[tuple[int, str, int]]) -> str | None:
    """The dialect of a document longer than the head, from the keys and messages the head holds."""
    obj = text[0] == "{"
    top = {k: p for d, k, p in keys if d == (1 if obj else 2)}
    start = top.get("messages", top.get("traj"))
    if start is None and obj and "values" in top:
        start = next((p for d, k, p in keys if d == 2 and k == "messages" and p > top["values"]), None)
    if start is None and obj:
        return None
    start = start or 0  # a top-level array of messages
    messages = _elements(text, start)
    system = obj and "system" in top
    if messages:
        return _dialect(messages, system)
    depth = next((d for d, _, p in keys if p == start), 0) + 2  # the first message's own keys
    fields = {k: p for d, k, p in keys if d == depth and p > start}
    if "role" not in fields:
        return None
    role = _decoder.raw_decode(text[fields["role"] :].lstrip())[0]
    if isinstance(role, str) and role in CHAT_ROLES:
        return "anthropic" if system else "openai"
    return None


def sniff(path: Path, head: bytes) -> tuple[str, str] | None:
    """('doc' or 'jsonl', dialect) for a chat file, from its head; None when it is not one."""
    return _sniff(path.suffix.lower() in (".jsonl", ".ndjson"), head)


@lru_cache(maxsize=4)
def _sniff(jsonl_suffix: bool, head: bytes) -> tuple[str, str] | None:
    """Cached: the four chat importers ask about the same head in turn."""
    text = head_text(head).lstrip()
    if not text or text[0] not in "[{":
        return None
    keys, end = _keys(text)
    try:
        if end is not None:
            rest = text[end:].strip()
            if rest and rest[0] not in "[{":
                return None
            dialect = _doc_dialect(json.loads(text[:end]))
            return ("jsonl" if rest or jsonl_suffix else "doc", dialect) if dialect else None
        dialect = _head_dialect(text, keys)
    except (json.JSONDecodeError, RecursionError):
        return None
    return ("doc", dialect) if dialect else None


def read_document(path: Path) -> Any:
    """The whole JSON document (a document: at most the limit of ingest.limits); errors name line
    and byte."""
    size, limit = path.stat().st_size, max_document_bytes()
    if size > limit:
        raise too_large("the chat document (read whole)", size_text(size), limit, path=str(path))
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        try:
            doc = reader.value()
        except RecursionError:
            raise InputError("JSON nested too deeply to read", path=str(path)) from None
        reader.end()
    return doc


class ChatImporter:
    """A chat document (one JSON value): one trace per run."""

    def __init__(self, name: str, dialect: str, description: str, framework: str | None = None) -> None:
        self.name, self.dialect, self.description, self.framework = name, dialect, description, framework

    def detect(self, path: Path, head: bytes) -> str | None:
        if sniff(path, head) == ("doc", self.dialect):
            return f"a JSON 'messages' list of {self.description}"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        digest = file_digest(path)
        for run in runs_of(read_document(path), str(path)):
            framework = "langgraph" if run.at.endswith("values.messages") else self.framework
            yield trace_of(self.name, digest, run, str(path), framework)


class ChatJsonlImporter:
    """JSONL of runs: each non-blank line one run, each run one trace."""

    name = "chat-jsonl"
    description = "JSONL of chat runs, one conversation per line (fine-tuning and evals data)"

    def detect(self, path: Path, head: bytes) -> str | None:
        found = sniff(path, head)
        if found and found[0] == "jsonl":
            return f"JSON lines, each a run of {found[1]} chat messages"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        digest = file_digest(path)
        where = str(path)
        with path.open("rb") as stream:
            for lineno, offset, raw in bounded_lines(stream, where):
                if not raw.strip():
                    continue
                doc = json_line(raw, where, lineno, offset)
                for run in runs_of(doc, where, lineno):
                    yield trace_of(self.name, digest, run, where, None, lineno)


IMPORTERS = [
    ChatImporter("langchain-messages", "langchain", "LangChain/LangGraph messages", "langchain"),
    ChatImporter("anthropic-messages", "anthropic", "Anthropic Messages (content blocks)"),
    ChatImporter("openai-chat", "openai", "OpenAI chat messages"),
    ChatJsonlImporter(),
]
