"""A file's lines as line-addressed ``sed -i`` edits leave them, so that an edit that puts the code
back is read as such.

Agents often undo a change with the same tool they made it with (``sed -i '989,993d'`` after a
``sed -i '988i\\ …'``) and put it back the same way; neither is a new change. The model follows one
file through the edits it can follow exactly, each line named by what it is: an original line (its
number in the original file) or a line an edit wrote (its text; a ``N s/…/…/`` substitution: the
line it rewrote and the expression). Any other write of the file (an editor, a script, a pattern
address, a ``sed`` script of several commands) leaves it unknown until ``git checkout`` brings
back the original (the caller starts a new model). Two states are the same code when they differ
only by blank lines an edit wrote (a blank line changes no behaviour).
"""

from __future__ import annotations

import re

# one command of a sed script with line addresses: 988i\, 989,992c\, 989,993d, 927s/a/b/
_ADDRESSED = re.compile(r"(?s)\A\s*(\d+)(?:,(\d+))?\s*([iacds])(.*)\Z")
Line = int | str  # an original line by its number, or a line an edit wrote


class LineModel:
    """The lines of one file, from the original code, as the edits it can follow leave them."""

    def __init__(self) -> None:
        self._head: list[Line] = []  # lines 1..len(head); after them the original lines run on
        self._next = 1  # the original number of the first line after the head
        self.known = True

    def _lose(self) -> None:
        """An edit the model cannot follow wrote the file."""
        self.known = False

    def after(self, script: str | None) -> LineModel:
        """The file after one ``sed -i`` script (None: a write the model cannot follow), as a new
        model: a state already taken stays as it was."""
        out = LineModel()
        out._head, out._next, out.known = list(self._head), self._next, self.known
        if script is None:
            out._lose()
        else:
            out._apply(script)
        return out

    def _apply(self, script: str) -> None:
        """One ``sed -i`` script; one the model cannot follow leaves the file unknown."""
        found = _ADDRESSED.match(script)
        if not self.known or found is None:
            self._lose()
            return
        first = int(found.group(1))
        last = int(found.group(2) or first)
        verb, rest = found.group(3), found.group(4)
        if last < first or first < 1:
            self._lose()
            return
        if verb == "d" and not rest.strip():
            self._splice(first - 1, last, [])
        elif verb == "s" and _substitution(rest):
            self._grow(last)
            for n in range(first - 1, last):
                self._head[n] = f"{self._head[n]!r} s{rest}"
        elif verb in "iac" and (text := _text(rest)) is not None:
            if verb == "c":
                self._splice(first - 1, last, text)
            else:
                at = first - 1 if verb == "i" else first
                self._splice(at, at, text)
        else:
            self._lose()

    def state(self) -> tuple[tuple[Line, ...], int] | None:
        """The file's lines up to where the original runs on unchanged (written blank lines left
        out) and the original number that run starts at; None when unknown."""
        if not self.known:
            return None
        lines = [ln for ln in self._head if not (isinstance(ln, str) and not ln.strip())]
        tail = self._next
        while lines and lines[-1] == tail - 1 and isinstance(lines[-1], int):
            tail -= 1
            lines.pop()
        return tuple(lines), tail

    def _grow(self, n: int) -> None:
        while len(self._head) < n:
            self._head.append(self._next)
            self._next += 1

    def _splice(self, start: int, end: int, text: list[str]) -> None:
        self._grow(end)
        self._head[start:end] = text


def _text(rest: str) -> list[str] | None:
    """The lines an ``i`` / ``a`` / ``c`` command writes: the block after ``\\`` + newline, lines
    joined by ``\\`` + newline, or GNU's one-line form; None for text with other escapes (the
    model does not guess what they write)."""
    if rest.startswith("\\\n"):
        body = rest[2:]
    elif rest.startswith("\\"):
        body = rest[1:]
    else:
        body = rest.lstrip()
    lines = body.split("\\\n")
    if any("\\" in ln or "\n" in ln for ln in lines):
        return None
    return lines


def _substitution(rest: str) -> bool:
    """Whether what follows ``s`` is one substitution that writes no new line: a delimiter, three
    fields split by it and flags only (no ``;`` and a second command)."""
    if not rest or rest[0].isspace() or rest[0] == "\\" or "\n" in rest:
        return False
    fields = re.split(rf"(?<!\\){re.escape(rest[0])}", rest[1:])
    return len(fields) == 3 and re.fullmatch(r"[gpiI\d]*", fields[2]) is not None and "\\n" not in fields[1]
