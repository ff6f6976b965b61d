"""What the head of a file looks like, in words: the first half of a 'not recognised' message.

"a JSON object with keys messages, reward", "JSONL whose first line is a list", "text starting with
'…'": enough for a user to see what the importers saw, without dumping the file.
"""

from __future__ import annotations

import io
import json
from typing import Any

from auditor.core.errors import InputError
from ingest.base import head_text
from ingest.jsonstream import JsonReader

MAX_KEYS = 12
MAX_TEXT = 60


def _keys(keys: list[str]) -> str:
    shown = ", ".join(keys[:MAX_KEYS]) + (", …" if len(keys) > MAX_KEYS else "")
    return f"keys {shown}" if keys else "no keys"


def _value(value: Any) -> str:
    """One JSON value in words: an object names its keys."""
    if isinstance(value, dict):
        return f"an object with {_keys(list(value))}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"


def _document(head: bytes) -> str | None:
    """A JSON document's top level, read as far as the head goes (a cut head still names its keys)."""
    reader = JsonReader(io.BytesIO(head), "head")
    keys: list[str] = []
    try:
        if reader.peek() == "{":
            for key in reader.members():
                keys.append(key)
            reader.end()
            return f"a JSON object with {_keys(keys)}"
        if reader.peek() == "[":
            for _ in reader.elements():
                return f"a JSON list whose first element is {_value(reader.value())}"
            return "an empty JSON list"
    except InputError:
        if keys:
            return f"a JSON object with {_keys(keys)} (in its first {len(head) >> 10} KiB)"
        return None
    return None


def describe(head: bytes) -> str:
    """The shape of a file's head, for an error message."""
    if not head.strip():
        return "an empty file"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive"
    if b"\x00" in head:
        return "binary data (it holds NUL bytes)"
    text = head_text(head)
    first, _, rest = text.lstrip().partition("\n")
    try:
        line = json.loads(first)
    except json.JSONDecodeError:
        line = None
    if line is not None and rest.strip()[:1] in ("{", "["):
        return f"JSONL whose first line is {_value(line)}"
    if text.lstrip()[:1] in ("{", "["):
        found = _document(head)
        if found:
            return found
    shown = first.strip()[:MAX_TEXT]
    return f"text starting with {shown!r}"
