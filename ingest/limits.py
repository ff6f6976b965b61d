"""The one size limit every importer applies: no document larger than ``max_document_bytes()``.

A document is what an importer holds whole to parse it: one line of a line-based file (canonical
JSONL, chat JSONL, span JSONL, a text log), one JSON value decoded whole (the history of a
Who&When file, one record of a MAD corpus, one event of an OpenHands trajectory, one span
document...), one member of an Inspect ``.eval`` archive. A file may be far larger than the limit
where it is read document by document: a canonical trace of a million steps is a million lines.
Parsing holds several times a document's size, so the limit bounds an import's memory.

The default is 64 MiB; ``AUDITOR_MAX_DOCUMENT_MB`` (a number of MiB, read when an input is opened)
sets another, for the CLI and the server alike. docs/input.md documents it.
"""

from __future__ import annotations

import os

from auditor.core.errors import InputError

ENV = "AUDITOR_MAX_DOCUMENT_MB"
DEFAULT_MB = 64
MIB = 1 << 20


def max_document_bytes() -> int:
    """The limit in bytes: ``AUDITOR_MAX_DOCUMENT_MB`` when set, else 64 MiB."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_MB * MIB
    try:
        mb = float(raw)
    except ValueError:
        mb = 0.0
    if not mb > 0 or mb == float("inf"):
        raise InputError(
            f"{ENV}={raw[:40]!r} is not a size: give a number of MiB above 0",
            field=ENV,
            hint=f"e.g. {ENV}=256, or unset it for the default of {DEFAULT_MB} MiB",
        )
    return max(1, int(mb * MIB))


def size_text(size: int) -> str:
    """A byte count as people read it: 200 MiB, 1.5 MiB, 900 KiB, 12 bytes."""
    if size >= MIB:
        return f"{size / MIB:.1f}".removesuffix(".0") + " MiB"
    if size >= 1024:
        return f"{size / 1024:.1f}".removesuffix(".0") + " KiB"
    return f"{size} bytes"


def too_large(
    what: str,
    size: str,
    limit: int,
    *,
    path: str,
    line: int | None = None,
    offset: int | None = None,
) -> InputError:
    """The refusal of a document over the limit: what it is and where, its size, the limit, and
    how to raise the limit. ``size`` is said as known: "200 MiB", "more than 64 MiB"."""
    return InputError(
        f"{what} is {size}, over the limit of {size_text(limit)} for one document",
        path=path,
        line=line,
        offset=offset,
        hint=f"set {ENV} to a larger number of MiB to read it (an import's memory grows with it)",
    )
