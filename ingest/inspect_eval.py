"""Inspect AI ``.eval`` archives read with ``zipfile``, without inspect_ai.

An ``.eval`` file is a zip of JSON members: ``header.json`` (the log without its samples: version,
status, ``eval``, plan, results, stats), one ``samples/<id>_epoch_<n>.json`` per sample, and
bookkeeping (``summaries.json``, ``reductions.json``, ``_journal/…``). A log still being written has
no ``header.json`` yet; its ``_journal/start.json`` holds ``version``, ``eval`` and ``plan``.

Samples are read one member at a time, in the order they were first written; a sample written again
(a retry) is a second member of the same name, and the last one wins, as Inspect reads it.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.limits import max_document_bytes, size_text, too_large

HEADERS = ("header.json", "_journal/start.json")
SAMPLES_DIR = "samples/"


class EvalArchive:
    """One open ``.eval`` archive: its header and its sample members."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise InputError(f"not a readable .eval (zip) archive: {exc}", path=str(path)) from exc
        names = self.zip.namelist()
        self.samples = [n for n in dict.fromkeys(names) if n.startswith(SAMPLES_DIR) and n.endswith(".json")]
        found = next((n for n in HEADERS if n in names), None)
        if found is None:
            self.close()
            raise InputError(
                "the archive has neither header.json nor _journal/start.json",
                path=str(path),
                hint="is this an Inspect .eval log?",
            )
        header = self.member(found)
        if not isinstance(header, dict):
            self.close()
            raise InputError("must be a JSON object", path=f"{path}!{found}")
        self.header: dict[str, Any] = header

    def member(self, name: str) -> Any:
        """One JSON member, decoded; errors name the archive, the member and the byte."""
        where = f"{self.path}!{name}"
        info = self.zip.getinfo(name)  # the last member of that name
        limit = max_document_bytes()
        if info.file_size > limit:
            raise too_large("the archive member", size_text(info.file_size), limit, path=where)
        try:
            data = self.zip.read(info)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot read the archive member: {exc}", path=where) from exc
        try:
            return json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError("not UTF-8 text", path=where, offset=exc.start) from exc
        except json.JSONDecodeError as exc:
            raise InputError(
                f"malformed JSON: {exc.msg}", path=where, line=exc.lineno, offset=exc.pos
            ) from exc

    def sample_items(self) -> Iterator[tuple[str, Any]]:
        """(member name, decoded sample) for each sample member, one at a time."""
        for name in self.samples:
            yield name, self.member(name)

    def close(self) -> None:
        self.zip.close()


def is_archive(path: Path) -> bool:
    """A zip, or a file named ``.eval`` (so a damaged archive is reported as one, not as bad JSON)."""
    return path.suffix == ".eval" or zipfile.is_zipfile(path)
