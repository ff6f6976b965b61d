"""Importers for a framework's raw log as its own file (one trace per file).

The trace id is the parser name plus the file's sha256 prefix, so re-importing the same bytes
(under any name) maps to the same trace and appends nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ingest.base import Facts, ImportedTrace, StepBuilder, file_digest, head_text
from ingest.frameworks import FORMATS, LogFormat, Source
from schemas.trace import TraceHeader


class RawLogImporter:
    """Wraps one framework parser as an importer of whole files."""

    def __init__(self, fmt: LogFormat) -> None:
        self.fmt = fmt
        self.name = fmt.name
        self.description = f"{fmt.framework} raw log"

    def detect(self, path: Path, head: bytes) -> str | None:
        return self.fmt.sniff(head_text(head))

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        digest = file_digest(path)
        source = Source(where=str(path), path=path)
        header = TraceHeader(
            trace_id=f"{self.name}-{digest[:16]}",
            source=str(path),
            framework=self.fmt.framework,
            metadata={"source_sha256": digest, "importer": self.name},
        )

        def steps(facts: Facts) -> Iterator:
            return self.fmt.parse(source, facts, StepBuilder(str(path)))

        yield ImportedTrace(importer=self.name, header=header, steps=steps)


RAW_IMPORTERS = [RawLogImporter(fmt) for fmt in FORMATS.values()]
