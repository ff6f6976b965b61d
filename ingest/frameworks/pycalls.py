"""Find Python calls written inside agent messages (``apis.spotify.next_song(...)``, ``x._run(...)``).

Several frameworks act through code the agent writes; the call names and their argument text are
explicit in the log, so they become the structured tool part of the step, verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.trace import ToolInfo


@dataclass(frozen=True)
class PyCall:
    name: str
    arguments: str


def _closing(text: str, start: int) -> int:
    """Index of the parenthesis that closes the one at ``start`` (quote-aware), or -1."""
    depth = 0
    quote = ""
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def find_calls(text: str, pattern: re.Pattern[str]) -> list[PyCall]:
    """Calls whose name matches ``pattern`` (group 'name', ending just before the '(')."""
    calls = []
    for m in pattern.finditer(text):
        open_at = m.end() - 1
        close = _closing(text, open_at)
        args = text[open_at + 1 : close] if close > 0 else text[open_at + 1 :].split("\n", 1)[0]
        calls.append(PyCall(m.group("name"), args.strip()))
    return calls


def tool_of(calls: list[PyCall]) -> ToolInfo | None:
    """The structured tool of a step: its first call (all calls are listed in ``raw``)."""
    return ToolInfo(name=calls[0].name, arguments=calls[0].arguments) if calls else None


def calls_raw(calls: list[PyCall]) -> list[dict[str, str]] | None:
    return [{"name": c.name, "arguments": c.arguments} for c in calls] if len(calls) > 1 else None
