"""Line sources for the text-log importers: a file read one bounded line at a time, or a string.

Text logs (ChatDev, AppWorld, loguru) are parsed line by line, so the same parser reads a 1 GB
file from disk and a trace string embedded in a corpus record.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from auditor.errors import InputError

MAX_LINE_BYTES = 16 * 1024 * 1024


def bounded_lines(
    stream: BinaryIO, path: str, max_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, int, bytes]]:
    """Yield (line number, byte offset, raw line) without ever reading more than one bounded line."""
    offset = 0
    lineno = 0
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            raise InputError(
                f"line is longer than {max_bytes // (1024 * 1024)} MiB",
                path=path,
                line=lineno,
                offset=offset,
                hint="split the record; one line should hold one record",
            )
        if b"\x00" in raw:
            raise InputError(
                "file looks binary (NUL byte)", path=path, line=lineno, offset=offset + raw.index(b"\x00")
            )
        yield lineno, offset, raw
        offset += len(raw)


def file_lines(path: Path, max_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
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
