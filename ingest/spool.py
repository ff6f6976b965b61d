"""The private copy of an input that can be read only once (stdin, a pipe, a FIFO, a device).

Such an input is copied to a temporary file before anything is checked: detection, the check and
the write each open the input again. Two things bound that copy:

- **Size.** It is held to the one document size limit (``ingest.limits``): an input read whole
  before it is parsed is one document. An endless pipe (``/dev/zero``, ``yes``) is refused once
  the copy passes the limit, not when the disk is full (11 GB were left behind before).
- **Lifetime.** The copy is removed on every exit: an error, Ctrl-C, and SIGTERM or SIGHUP too
  (their default action ends the process without running any cleanup). While a copy exists,
  those signals raise ``Terminated`` (a ``SystemExit`` with the shell's code, 128 + the signal),
  so cleanups run and an open store transaction rolls back; nothing is stored.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ingest.limits import ENV, max_document_bytes, size_text, too_large

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_CHUNK = 1 << 20


class Terminated(SystemExit):
    """A termination signal arrived: unwinds like ``sys.exit(128 + signal)``."""


def _terminate(signum: int, _frame: object) -> None:
    raise Terminated(128 + signum)


def unwind_terminations() -> dict[int, Any]:
    """From now on SIGTERM and SIGHUP unwind the stack (``Terminated``) instead of ending the
    process on the spot; returns the handlers they had. Only the main thread can take signals:
    elsewhere this does nothing (and returns no handler)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, _terminate) for s in SIGNALS}


@contextmanager
def terminations_unwind() -> Iterator[None]:
    """``unwind_terminations`` while inside; the handlers before it afterwards."""
    before = unwind_terminations()
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def copy_limited(source: BinaryIO, target: BinaryIO, where: str) -> None:
    """Copy ``source`` to ``target``; an ``InputError`` naming ``where`` once it passes the limit."""
    limit = max_document_bytes()
    copied = 0
    while chunk := source.read(min(_CHUNK, limit + 1 - copied)):
        copied += len(chunk)
        if copied > limit:
            refused = too_large(
                "the input (read once, and copied whole before it is checked)",
                f"more than {size_text(limit)}",
                limit,
                path=where,
            )
            refused.hint = f"give a file by its path, which is read document by document, or raise {ENV}"
            raise refused
        target.write(chunk)


@contextmanager
def spooled(source: BinaryIO, name: str, where: str) -> Iterator[Path]:
    """A private copy of ``source`` (a file called ``name`` in a folder of mode 0700), removed on
    every exit; ``where`` names the input in a refusal."""
    with terminations_unwind():
        folder = Path(tempfile.mkdtemp(prefix="auditor-spool-"))
        try:
            local = folder / name
            with local.open("wb") as copy:
                copy_limited(source, copy, where)
            yield local
        finally:
            _remove(folder)


def _remove(folder: Path) -> None:
    """Delete the copy with the termination signals held back: a second SIGTERM must not stop the
    cleanup halfway (it is taken once the folder is gone)."""
    held = os.name == "posix" and threading.current_thread() is threading.main_thread()
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
