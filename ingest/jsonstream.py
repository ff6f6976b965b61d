"""Incremental JSON reading: walk a huge top-level array or object without loading the file whole.

The standard library's decoder does the parsing (so ``NaN`` is accepted, as in the MAD file, and
refused later where a trace would hold it: see schemas.trace.finite); this module only feeds it a
window of the file that grows as a value needs it. Every error names the file, line and byte
offset where the input broke, also for what the decoder cannot take at all (a nesting deep enough
to exhaust its recursion, an integer of more than 4,300 digits) and for a key repeated in one
object, of which a decoder would silently keep only the last value.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from auditor.core.errors import InputError
from ingest.limits import max_document_bytes, size_text, too_large

CHUNK = 1 << 20
_WS = " \t\r\n"
_SEE = "see docs/input.md"


class _RepeatedKey(Exception):
    """Raised from inside the decoder: an object names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore[func-returns-value]
    return obj


def _repeated(key: str) -> str:
    shown = key if len(key) <= 40 else f"{key[:40]}…"
    return f"the key {shown!r} appears more than once in one object (a reader keeps only one value)"


_decoder = json.JSONDecoder(object_pairs_hook=_object)


class JsonReader:
    """A cursor over one JSON document read from a binary stream in growing windows."""

    def __init__(self, stream: BinaryIO, path: str, max_value_chars: int | None = None) -> None:
        """``max_value_chars``: the most text one value decoded whole may take; a value is a
        document, so by default the document limit (ingest.limits), counted in characters."""
        self.stream, self.path = stream, path
        self.max_value_chars = max_document_bytes() if max_value_chars is None else max_value_chars
        self._utf8 = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.buf = ""
        self.pos = 0
        self.value_start = 0  # where the last value() began, for errors about it
        self.eof = False
        self._base_bytes = 0
        self._base_line = 1
        self._read_bytes = 0
        self._reads = 0

    # -- buffer management -------------------------------------------------------------------
    def _fill(self, want: int = CHUNK) -> bool:
        """Read at least ``want`` more bytes; False at end of file."""
        if self.eof:
            return False
        data = self.stream.read(max(want, CHUNK))
        try:
            text = self._utf8.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise InputError(
                "not UTF-8 text",
                path=self.path,
                offset=self._read_bytes + exc.start,
                hint="save the file as UTF-8",
            ) from exc
        self._read_bytes += len(data)
        if "\x00" in text:
            at = self._read_bytes - len(data) + data.index(b"\x00")
            raise InputError("file looks binary (NUL byte)", path=self.path, offset=at)
        if self.pos > CHUNK:
            consumed = self.buf[: self.pos]
            self._base_bytes += len(consumed.encode("utf-8"))
            self._base_line += consumed.count("\n")
            self.buf, self.pos = self.buf[self.pos :], 0
        self.buf += text
        if not data:
            self.eof = True
        return bool(data)

    def where(self, pos: int | None = None) -> tuple[int, int]:
        """(line, byte offset) of a buffer position, for error messages."""
        pos = self.pos if pos is None else pos
        head = self.buf[:pos]
        return self._base_line + head.count("\n"), self._base_bytes + len(head.encode("utf-8"))

    def error(self, message: str, pos: int | None = None, hint: str | None = None) -> InputError:
        line, offset = self.where(pos)
        return InputError(message, path=self.path, line=line, offset=offset, hint=hint)

    def peek(self) -> str:
        """The next non-blank character ('' at end of input), without consuming it."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            raise self.error(
                f"expected '{char}', found {found!r}" if found else f"expected '{char}', input ends"
            )
        self.pos += 1

    # -- values -------------------------------------------------------------------------------
    def value(self) -> Any:
        """Decode the next complete JSON value, reading more of the file as long as it needs."""
        if not self.peek():
            raise self.error("input ends where a value was expected", hint="the file looks truncated")
        while True:
            try:
                obj, end = _decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if not self.eof and len(self.buf) - self.pos < self.max_value_chars:
                    self._fill(len(self.buf) - self.pos)  # double the window: linear in the value size
                    continue
                if not self.eof:
                    raise self._too_large(None) from None
                raise self.error(
                    f"malformed JSON: {exc.msg}", exc.pos, hint="the file is truncated or not valid JSON"
                ) from exc
            except _RepeatedKey as exc:
                raise self.error(_repeated(exc.key), hint=_SEE) from None
            except RecursionError:  # the decoder recurses per level: a hostile nesting ends it
                raise self.error("objects and arrays nested too deeply to read", hint=_SEE) from None
            except ValueError:  # an integer beyond the interpreter's digit limit
                raise self.error("an integer of more than 4,300 digits", hint=_SEE) from None
            if end == len(self.buf) and not self.eof and self._fill():
                continue  # a number or literal may continue past the window
            if end - self.pos > self.max_value_chars:  # whole, but over the limit all the same
                raise self._too_large(end - self.pos)
            self.value_start, self.pos = self.pos, end
            self._reads += 1
            return obj

    def _too_large(self, chars: int | None) -> InputError:
        """The value starting here is ``chars`` long, or (None) runs on past the limit unread; the
        file's size is said too when known."""
        line, offset = self.where()
        try:
            whole = f" (the file is {size_text(os.fstat(self.stream.fileno()).st_size)})"
        except (AttributeError, OSError, ValueError):  # a stream without a file behind it
            whole = ""
        size = (
            size_text(chars) if chars is not None else f"more than {size_text(self.max_value_chars)}"
        ) + whole
        return too_large(
            "a JSON value read whole", size, self.max_value_chars, path=self.path, line=line, offset=offset
        )

    def array(self) -> Iterator[Any]:
        """The elements of the array that starts here, one at a time."""
        for _ in self.elements():
            yield self.value()

    def elements(self) -> Iterator[int]:
        """The positions of the array that starts here. At each the caller reads the element with
        ``value()``, ``members()`` or ``elements()`` (so a big element is walked, not decoded), or
        leaves it, and it is skipped."""
        self.expect("[")
        self._reads += 1
        if self.peek() == "]":
            self.pos += 1
            return
        n = 0
        while True:
            reads = self._reads
            yield n
            if self._reads == reads:
                self.value()  # the caller did not read it: skip it
            nxt = self.peek()
            self.pos += 1
            if nxt == "]":
                return
            if nxt != ",":
                raise self.error(
                    "expected ',' or ']' in an array", self.pos - 1, hint="the file looks truncated"
                )
            n += 1

    def members(self) -> Iterator[str]:
        """The keys of the object that starts here. After each key the caller reads its value with
        ``value()``, ``array()``, ``members()`` or ``elements()``, or leaves it, and it is skipped."""
        self.expect("{")
        self._reads += 1
        if self.peek() == "}":
            self.pos += 1
            return
        seen: set[str] = set()
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise self.error("object keys must be strings")
            if key in seen:
                raise self.error(_repeated(key), self.value_start, hint=_SEE)
            seen.add(key)
            self.expect(":")
            reads = self._reads
            yield key
            if self._reads == reads:
                self.value()  # the caller did not read it: skip it
            nxt = self.peek()
            self.pos += 1
            if nxt == "}":
                return
            if nxt != ",":
                raise self.error(
                    "expected ',' or '}' in an object", self.pos - 1, hint="the file looks truncated"
                )

    def end(self) -> None:
        """Check that nothing but blanks follows the document."""
        if self.peek():
            raise self.error("unexpected data after the JSON document")


def top_level_kind(head: bytes) -> str:
    """'array', 'object' or '' from the first non-blank byte of a file's head."""
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1]
    return {b"[": "array", b"{": "object"}.get(text, "")
