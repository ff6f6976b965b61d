"""aider chat histories (``.aider.chat.history.md``, which aider writes into the project): one trace
per file, every session in it (``# aider chat started at …``) in order.

The file is Markdown with a mark a line for who wrote it, and the steps follow the marks:

- ``#### `` lines: the principal's message (human ``user``; the first is the task), one step for a
  run of such lines;
- ``> `` lines: aider itself (``system``, actor ``aider``). Its own notices are read for what
  they record: ``Running CMD`` (a shell command the agent proposed, run on the principal's
  consent) is the agent's ``shell`` call, whose output the file does not keep; ``## Running: CMD``
  (the lint or test command aider runs after the agent's edit) is one too, answered by the lines
  that follow, up to ``Attempt to fix … errors?`` (then an
  error: the command reported errors); ``Applied edit to PATH`` answers the edit the reply before
  it proposed for that file; ``Commit SHA MSG``, the session's start and every other notice are the
  harness speaking. A notice that runs over several lines has the mark on its first line only,
  and ends at the line that ends with aider's line break (two spaces), or where the next marked
  line aider wrote (it ends with the break) begins;
- any other line: the agent's reply (``agent``). Its ``SEARCH/REPLACE`` blocks (a file's name, a
  fenced ``<<<<<<< SEARCH`` … ``=======`` … ``>>>>>>> REPLACE``) and whole-file blocks (a file's
  name and a fenced file) are its edits: an ``edit`` call each (``file_path`` and what it
  writes), placed when aider applied it; a block aider never applied wrote nothing. Inside a
  reply's fenced block a line is the reply's, unless it is marked and ends with aider's line break
  (a fence the model never closed ends there).

A step's text is the lines without their mark and aider's trailing line break. The versions and
models aider names go to the header. A history records no verdict on its task: no outcome. Nor
does it keep what the commands it ran printed (``/run``, ``/test`` and the principal's own runs
are outside it), so it cannot show that a change never ran: its edits are not taken for a
session's submission, and the coding findings that rest on the test runs are not filed on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.base import Facts, ImportedTrace, StepBuilder, file_header, head_text
from ingest.chat_message import Call, ChatMessage, Result, Text
from ingest.chat_steps import chat_steps
from ingest.textlines import file_lines
from schemas.trace import TraceStep

AGENT = "agent"
HARNESS = "aider"
_START = re.compile(r"(?m)^# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d[ \t]*$")
_BREAK = "  "  # aider ends each line it writes with a Markdown line break
_RAN = re.compile(r"\ARunning (.+)\Z", re.S)
_CHECK = re.compile(r"\A## Running: (.+)\Z", re.S)
_ERRORS = re.compile(r"\AAttempt to fix (?:lint|test) errors\?")
_APPLIED = re.compile(r"\AApplied edit to (.+)\Z")
_VERSION = re.compile(r"\AAider v(\S+)\Z")
_MODEL = re.compile(r"\A(?:Main model|Model): (\S+)")
_TOKENS = re.compile(r"\ATokens: ")
_SEARCH_REPLACE = re.compile(
    r"(?m)^([^\n`]+)\n```[^\n]*\n<<<<<<< SEARCH\n([\s\S]*?)^=======\n([\s\S]*?)^>>>>>>> REPLACE[^\n]*\n```"
)
_WHOLE = re.compile(r"(?m)^([^\s`][^\n`]*)\n```[^\n]*\n([\s\S]*?)^```[ \t]*$")


class AiderImporter:
    name = "aider"
    description = "aider chat history (.aider.chat.history.md), one trace per file"

    def detect(self, path: Path, head: bytes) -> str | None:
        if _START.search(head_text(head)):
            return "Markdown opened by '# aider chat started at' (aider's chat history)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        header = file_header(path, "aider", "aider")
        yield ImportedTrace(importer=self.name, header=header, steps=lambda facts: _steps(path, facts))


def _steps(path: Path, facts: Facts) -> Iterator[TraceStep]:
    return chat_steps(_History(facts).messages(_blocks(path)), StepBuilder(str(path)))


def _blocks(path: Path) -> Iterator[tuple[str, str, int]]:
    """(who, text, first line) for each run of lines one mark opens: ``user`` (``####``),
    ``notice`` (``>``, one a notice), ``reply`` (unmarked), ``start`` (a session's start)."""
    kind, lines, first = "", [], 0
    open_notice = False  # a notice whose last line has not ended yet
    fenced = False  # inside a reply's fenced block, where no line is a mark

    def flush() -> Iterator[tuple[str, str, int]]:
        text = "\n".join(lines).strip("\n") if kind != "reply" else "\n".join(lines).strip()
        if kind and (text.strip() or kind in ("user", "notice")):
            yield kind, text, first

    for n, raw in enumerate(file_lines(path), 1):
        line = raw.rstrip("\n").rstrip("\r")
        # a marked line that ends with aider's line break is aider's own, wherever it stands: it
        # ends a notice left open and a fence the reply never closed
        aiders = bool(_START.match(line)) or (_marked(line) and line.endswith(_BREAK))
        if open_notice and not aiders:
            lines.append(line.removesuffix(_BREAK))
            open_notice = not line.endswith(_BREAK)
            continue
        open_notice = False
        if kind == "reply" and (fenced or line.startswith("```")) and not aiders:
            lines.append(line)
            fenced = fenced != line.startswith("```")
            continue
        fenced = False
        if _START.match(line):
            yield from flush()
            kind, lines, first = "start", [line.removeprefix("# ")], n
            continue
        if line.startswith("####"):
            if kind != "user":
                yield from flush()
                kind, lines, first = "user", [], n
            lines.append(line[5:].removesuffix(_BREAK) if line.startswith("#### ") else "")
            continue
        if _marked(line) and not line.startswith("####"):
            yield from flush()
            kind, lines, first = "notice", [line[2:].removesuffix(_BREAK) if line.startswith("> ") else ""], n
            open_notice = bool(line[1:].strip()) and not line.endswith(_BREAK)
            continue
        if kind != "reply":
            yield from flush()
            kind, lines, first = "reply", [], n
        lines.append(line)
    yield from flush()


def _marked(line: str) -> bool:
    """A line that opens with a mark: the principal's (``####``) or aider's (``> ``, a bare ``>``)."""
    return line.startswith(("####", "> ")) or line.rstrip() == ">"


class _History:
    """One pass over a history's blocks, with the edits the last reply proposed and not yet applied."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.proposed: dict[str, tuple[dict[str, Any], str]] = {}  # file -> (arguments, block text)
        self.check: tuple[str, list[str], int] | None = None  # a lint/test command and its output so far
        self.calls = 0

    def messages(self, blocks: Iterator[tuple[str, str, int]]) -> Iterator[ChatMessage]:
        for kind, text, line in blocks:
            raw = {"line": line}
            if self.check is not None and kind != "notice":
                yield from self._checked(False)
            if kind == "user":
                if self.facts.task is None and text.strip():
                    self.facts.task = text
                self.proposed.clear()
                yield ChatMessage(None, "user", None, [Text(text)], raw)
            elif kind == "reply":
                self.proposed = _edits(text)
                yield ChatMessage(None, "assistant", AGENT, [Text(text)], raw)
            elif kind == "start":
                yield ChatMessage(None, "system", HARNESS, [Text(text)], raw)
            else:
                yield from self._notice(text, raw)
        if self.check is not None:
            yield from self._checked(False)

    def _call_id(self) -> str:
        self.calls += 1
        return f"aider-{self.calls}"

    def _notice(self, text: str, raw: dict[str, Any]) -> Iterator[ChatMessage]:
        if self.check is not None:
            if _ERRORS.match(text):
                yield from self._checked(True)
            else:
                self.check[1].append(text)
                return
        if not text.strip():
            return  # an empty notice: a blank line aider printed
        if _TOKENS.match(text):
            self.facts.count("notice:tokens")
            return
        for pattern, key in ((_VERSION, "versions"), (_MODEL, "models")):
            if found := pattern.match(text):
                seen = self.facts.metadata.setdefault(key, [])
                if found.group(1) not in seen:
                    seen.append(found.group(1))
        if found := _CHECK.match(text):
            call_id = self._call_id()
            self.check = (call_id, [], raw["line"])
            call = Call("shell", {"command": found.group(1)}, call_id, found.group(1))
            yield ChatMessage(None, "assistant", AGENT, [call], raw)
            return
        if found := _RAN.match(text):
            command = found.group(1)
            yield ChatMessage(
                None, "assistant", AGENT, [Call("shell", {"command": command}, self._call_id(), command)], raw
            )
            return
        if found := _APPLIED.match(text):
            path = self._proposed(found.group(1).strip())
            if path is not None:
                arguments, block = self.proposed.pop(path)
                call_id = self._call_id()
                yield ChatMessage(None, "assistant", AGENT, [Call("edit", arguments, call_id, block)], raw)
                yield ChatMessage(None, "tool", None, [Result(text, call_id, "edit", {"status": "ok"})], raw)
                return
        yield ChatMessage(None, "system", HARNESS, [Text(text)], raw)

    def _proposed(self, applied: str) -> str | None:
        """The proposed edit aider applied: the one naming that path, else the only one whose path
        and the applied one end in each other (the reply wrote ``hosts/x/configuration.nix``, aider
        the file it matched, ``configuration.nix``)."""
        if applied in self.proposed:
            return applied
        near = [p for p in self.proposed if p.endswith("/" + applied) or applied.endswith("/" + p)]
        return near[0] if len(near) == 1 else None

    def _checked(self, failed: bool) -> Iterator[ChatMessage]:
        """The answer to aider's own lint or test command: its output, an error if aider then
        offered to fix the errors it reported."""
        assert self.check is not None
        call_id, output, line = self.check
        self.check = None
        status = {"status": "error", "error_type": "reported_errors"} if failed else {"status": "ok"}
        text = "\n".join(output).strip("\n")
        yield ChatMessage(None, "tool", None, [Result(text, call_id, "shell", status)], {"line": line})


def _edits(reply: str) -> dict[str, tuple[dict[str, Any], str]]:
    """The edits a reply proposes, by file: SEARCH/REPLACE blocks, else whole files (a file's name
    above a fenced block; only one aider then applies is taken for an edit)."""
    blocks: dict[str, list[re.Match[str]]] = {}
    for m in _SEARCH_REPLACE.finditer(reply):
        blocks.setdefault(m.group(1).strip(), []).append(m)
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for path, found in blocks.items():  # one file's blocks: one edit, quoted from its first to its last
        edits = [{"old_string": m.group(2), "new_string": m.group(3)} for m in found]
        arguments = (
            {"file_path": path, **edits[0]} if len(edits) == 1 else {"file_path": path, "edits": edits}
        )
        out[path] = (arguments, reply[found[0].start() : found[-1].end()])
    if out:
        return out
    for m in _WHOLE.finditer(reply):
        path = m.group(1).strip()
        out[path] = ({"file_path": path, "content": m.group(2)}, m.group())
    return out


IMPORTER = AiderImporter()
