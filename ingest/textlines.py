"""Line sources for the text-log importers: a file read one bounded line at a time, or a string.

Text logs (ChatDev, AppWorld, loguru) are parsed line by line, so the same parser reads a 1 GB
file from disk and a trace string embedded in a corpus record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from auditor.core.errors import InputError
from ingest.limits import max_document_bytes, size_text, too_large


def bounded_lines(
    stream: BinaryIO, path: str, max_bytes: int | None = None
) -> Iterator[tuple[int, int, bytes]]:
    """Yield (line number, byte offset, raw line) without ever reading more than one bounded line:
    a line is a document, so ``max_bytes`` is the document limit (ingest.limits) unless given."""
    limit = max_document_bytes() if max_bytes is None else max_bytes
    offset = 0
    lineno = 0
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise too_large(
                "the line", _line_size(stream, len(raw)), limit, path=path, line=lineno, offset=offset
            )
        if b"\x00" in raw:
            raise InputError(
                "file looks binary (NUL byte)", path=path, line=lineno, offset=offset + raw.index(b"\x00")
            )
        yield lineno, offset, raw
        offset += len(raw)


def _line_size(stream: BinaryIO, read: int, most: int = 1 << 30) -> str:
    """The size of an over-long line of which ``read`` bytes were read, as text: the rest is read
    on in chunks to its end, counted and never held ("more than" past ``most`` bytes more)."""
    size = read
    while chunk := stream.readline(1 << 20):
        size += len(chunk)
        if chunk.endswith(b"\n"):
            return size_text(size)
        if size - read > most:
            return f"more than {size_text(size)}"
    return size_text(size)


def file_lines(path: Path, max_bytes: int | None = None) -> Iterator[str]:
    """Decoded lines of a text file, newline kept; bad UTF-8 names its line and byte."""
    name = str(path)
    with path.open("rb") as stream:
        for lineno, offset, raw in bounded_lines(stream, name, max_bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    "not UTF-8 text",
                    path=name,
                    line=lineno,
                    offset=offset + exc.start,
                    hint="save it as UTF-8",
                ) from exc
            yield text.lstrip("\ufeff") if lineno == 1 else text


def string_lines(text: str) -> Iterator[str]:
    """Lines of an in-memory log (a corpus record's trace string), newline kept; split on '\\n' only,
    exactly as a file is read."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def join_block(lines: list[str]) -> str:
    """A block's verbatim text: its lines joined, outer blank lines and trailing blanks removed."""
    return "".join(lines).strip("\r\n").rstrip()


def json_line(raw: bytes, path: str, line: int, offset: int, hint: str | None = None) -> Any:
    """One line of a JSON-lines log, decoded (a byte-order mark allowed on the first); a line that
    is no JSON or no UTF-8 names the file, the line and the byte or column."""
    try:
        return json.loads(raw.decode("utf-8-sig" if line == 1 else "utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError("not UTF-8 text", path=path, line=line, offset=offset + exc.start) from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=line, offset=offset, hint=hint
        ) from exc
    except RecursionError:
        raise InputError("JSON nested too deeply to read", path=path, line=line, hint=hint) from None
