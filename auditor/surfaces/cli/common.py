"""Shared CLI state and output helpers: human tables by default, --json for machines."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text


@dataclass
class CliState:
    store_url: str | None = None
    debug: bool = False


state = CliState()
console = Console()
err_console = Console(stderr=True)


def open_cli_store():  # -> auditor.core.store.EventStore
    from auditor.core.store import open_store

    return open_store(state.store_url)


JSON_OUTPUT = typer.Option(False, "--json", help="Machine-readable output.")
TRACE_ID = typer.Argument(..., help="Trace id (see 'auditor traces list').")
REDACT = typer.Option(
    False, "--redact", help="Replace secrets, e-mails and phone numbers before anything is stored."
)
REDACT_PATTERN = typer.Option(
    [], "--redact-pattern", help="Extra redaction pattern NAME=REGEX (repeatable; implies --redact)."
)


INPUT_FORMAT = typer.Option(
    "auto", "--input-format", help="Importer name, or auto to detect it (an unknown name lists them)."
)
# ``ingest`` named the importer ``--format`` before every command agreed on --input-format; the old
# spelling still works there, unlisted.
FORMAT_ALIAS = typer.Option(None, "--format", "-f", hidden=True)


def importer_name(input_format: str, alias: str | None) -> str:
    """The importer asked for by --input-format or its old spelling --format (not both, unless they agree)."""
    if alias is None or alias == input_format:
        return input_format
    if input_format != "auto":
        from auditor.core.errors import InputError

        raise InputError(
            f"--input-format {input_format!r} and --format {alias!r} disagree",
            field="--input-format",
            hint="give --input-format only (--format is its old name)",
        )
    return alias


def redaction(redact: bool, items: list[str]) -> tuple[bool, dict[str, str]]:
    """(redact?, extra patterns) from --redact and --redact-pattern, shared by every command that
    stores traces; a pattern that is not NAME=REGEX, or whose regex does not compile, is an input
    error."""
    import re

    from auditor.core.errors import InputError

    patterns = {}
    for item in items:
        name, sep, regex = item.partition("=")
        if not sep or not name.strip() or not regex:
            raise InputError(
                f"bad --redact-pattern '{item}'",
                field="--redact-pattern",
                hint="use NAME=REGEX, e.g. EMPLOYEE_ID=E\\d{6}",
            )
        try:
            re.compile(regex)
        except re.error as exc:
            raise InputError(
                f"bad --redact-pattern '{item}': {exc}", field="--redact-pattern", hint="fix the regex"
            ) from exc
        patterns[name.strip()] = regex
    return redact or bool(patterns), patterns


@contextmanager
def input_file(path: str | Path, from_stdin: bool, suffix: str = ".jsonl") -> Iterator[Path]:
    """The file a command reads: ``path``, or stdin copied to a temporary file (inputs are validated
    in full before anything is stored), no larger than the document size limit, and removed on
    every exit. From the copy on, SIGTERM and SIGHUP unwind the stack (``ingest.spool``); they are
    held from the copy's creation until its removal is armed, and while it is removed, so no
    signal falls in between."""
    if not from_stdin:
        yield Path(path)
        return
    from ingest.spool import SIGNALS, copy_limited, unwind_terminations

    unwind_terminations()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    fd, name = tempfile.mkstemp(prefix="auditor-stdin-", suffix=suffix)
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        with os.fdopen(fd, "wb") as tmp:
            copy_limited(sys.stdin.buffer, tmp, "stdin")
        yield Path(name)
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # a signal now waits until the copy is gone
        Path(name).unlink(missing_ok=True)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def output_target(path: Path) -> Path:
    """The file an output option writes (a symlink's target), or an InputError when it is not a
    regular file. Commands that store what they compute call it before storing anything, so a
    refused output leaves the store as it was."""
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file():
        from auditor.core.errors import InputError

        raise InputError(
            "is not a regular file: output is written to regular files only",
            path=str(path),
            hint="name a file, or '-o -' for standard output",
        )
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write a whole file or nothing: a crash or error never leaves a half-written result.

    ``-`` is standard output. A symlink is followed (its target is replaced, the link stays); an
    existing path that is not a regular file (a device, a FIFO, a directory) is refused: replacing
    ``/dev/null`` with a report is never what was meant."""
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = output_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:  # a read-only place, a parent that is a file: one line, nothing written
        raise _unwritable(path, exc) from exc
    try:
        os.fchmod(fd, _new_file_mode(path))  # mkstemp makes 0600; a written report is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk: the old file stays as it was
            raise _unwritable(path, exc) from exc
        raise


def _unwritable(path: Path, exc: OSError) -> Exception:
    from auditor.core.errors import InputError

    return InputError(f"cannot write the file: {exc.strerror or exc}", path=str(path))


def _new_file_mode(path: Path) -> int:
    """The mode ``open()`` would give: a replaced file keeps its own, a new one gets 0666 less the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


# C0 and C1 controls (ESC starts a terminal's escape sequences; CSI is one byte in C1) and the
# bidirectional overrides, which reorder what is shown; tab and newline lay text out
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def cell(value: Any) -> Text:
    """A value from a trace as terminal text: never markup, and a control character is shown
    escaped (``\\x1b``), so a field written by whoever produced the trace cannot clear the
    screen, retitle the terminal or reorder what is printed."""
    text = "" if value is None else str(value)
    return Text(_CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text))


def print_table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*[cell(v) for v in row])  # cells are data, never markup
    console.print(table)
