"""From an input to the store: check every trace in full, then write them all in one transaction.

- Read once. A pipe, FIFO or device is copied once to a private temporary file and read from
  there (detection, check and write each open the input), no larger than the document size
  limit, removed on every exit (``ingest.spool``). A regular file is read again for the
  write, so its sha256 is taken before the check and again before the commit: a file that changed
  meanwhile (grown, cut, or rewritten in place at the same size) is refused with nothing stored.
- Nothing half-written. The check pass validates every trace (ids, indexes, fields) before the
  transaction; the write pass proves every value storable as it hashes it, and the whole input is
  one transaction (auditor.core.store.traces.write_traces), so any error stores nothing.
- One trace id, one history: the same content again appends nothing, other content under a stored
  id is refused; ``trace_id`` stores a one-trace input under a new id on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import ValidationError

from auditor.core.errors import AuditorError, InputError
from ingest.base import ImportedTrace, file_digest
from ingest.claude_code import read_with_session
from ingest.openhands_sdk import read_with_state
from ingest.redact import Redactor
from ingest.registry import detect, get, open_traces
from ingest.spool import spooled
from schemas.trace import LabelsRecord, TraceHeader, TraceStep

KEEP_OPEN = 64  # traces of one file kept between the check pass and the write pass


@dataclass(frozen=True)
class IngestSummary:
    """What one trace's ingest did."""

    path: str
    importer: str
    reason: str
    trace_id: str
    steps: int
    appended: int
    already_present: int
    labels: bool
    redacted: dict[str, int] | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def choose(path: Path, fmt: str = "auto") -> tuple[str, str]:
    """(importer name, why) for a file: detected, or named by the user."""
    if fmt == "auto":
        return detect(path)
    return get(fmt).name, "named with --format"


@contextmanager
def readable(path: Path) -> Iterator[Path]:
    """The input as a file that can be opened more than once: itself when it is a regular file
    (or missing, or a directory: the importers say so), else a private copy of what a single read
    of the pipe, FIFO or device gave, kept under the input's own name (detection reads it), held
    to the document size limit and removed on every exit, SIGTERM too (``ingest.spool``)."""
    if not path.exists() or path.is_file() or path.is_dir():
        yield path
        return
    with path.open("rb") as source, spooled(source, path.name or "input", str(path)) as local:
        yield local


@dataclass(frozen=True)
class _Shaping:
    """What the input's traces become before storage (the source named, a new id, redaction):
    applied alike in the check pass and the write pass."""

    local: Path
    source: str | None
    trace_id: str | None
    redact: bool
    patterns: dict[str, str] | None

    def apply(
        self, trace: ImportedTrace
    ) -> tuple[TraceHeader, LabelsRecord | None, Iterator[TraceStep], Redactor | None]:
        """The trace as it will be stored, and its redactor (which counts what it replaced)."""
        header, labels, steps = trace.header, trace.labels, trace.steps()
        update: dict[str, str] = {}
        if self.source is not None and header.source in (str(self.local), self.local.name):
            update["source"] = self.source
        if self.trace_id is not None:
            update["trace_id"] = self.trace_id
        if update:
            try:
                header = TraceHeader.model_validate({**header.model_dump(), **update})
            except ValidationError as exc:
                first = exc.errors()[0]
                raise InputError(first["msg"], field="--trace-id") from None
            if labels is not None:
                labels = labels.model_copy(update={"trace_id": header.trace_id})
        if not self.redact:
            return header, labels, steps, None
        redactor = Redactor(self.patterns)
        header = redactor.header(header)
        labels = redactor.labels(labels) if labels is not None else None
        return header, labels, map(redactor.step, steps), redactor


def check(path: Path, fmt: str, one_trace: bool = False) -> list[ImportedTrace] | None:
    """Validate every trace of the file; return them when few enough to keep for the write.
    ``one_trace``: the input must hold exactly one (it is stored under a new id)."""
    kept: list[ImportedTrace] | None = []
    for count, trace in enumerate(open_traces(path, fmt), start=1):
        trace.scan()
        if one_trace and count > 1:
            raise InputError(
                "--trace-id names one trace, but this input holds several",
                field="--trace-id",
                hint="give --trace-id for an input of one trace only",
            )
        if kept is not None:
            kept.append(trace)
            if len(kept) > KEEP_OPEN:
                kept = None
    return kept


def ingest_path(
    store,
    path: Path,
    fmt: str = "auto",
    redact: bool = False,
    patterns: dict[str, str] | None = None,
    source: str | None = None,
    trace_id: str | None = None,
) -> list[IngestSummary]:
    """Import every trace of one input into ``store`` (an auditor.core.store.EventStore), all in one
    transaction.

    ``patterns`` adds redaction patterns (name → regex with an optional ``value`` group);
    ``source`` names the origin when the file is a spool (stdin); ``trace_id`` stores the input's
    one trace under that id."""
    path = Path(path)
    with readable(path) as local:
        try:
            return _ingest(store, path, local, fmt, redact, patterns, source, trace_id)
        except AuditorError as exc:
            if local != path:  # name the input, not the private copy
                exc.args = (str(exc).replace(str(local), str(path)),)
            raise


def _ingest(
    store,
    path: Path,
    local: Path,
    fmt: str,
    redact: bool,
    patterns: dict[str, str] | None,
    source: str | None,
    trace_id: str | None,
) -> list[IngestSummary]:
    from auditor.core.store.traces import TraceDocument, write_traces

    name, reason = choose(local, fmt)  # first: a missing file or a directory is an input error
    before = file_digest(local)
    if local != path and source is None:
        source = str(path)
    shaping = _Shaping(local, source, trace_id, redact, patterns)
    kept = check(local, name, one_trace=trace_id is not None)
    where = str(path)
    shaped: list[tuple[bool, Redactor | None]] = []  # per trace: labels?, its redactor

    def documents() -> Iterator[TraceDocument]:
        for trace in kept if kept is not None else _rescanned(local, name):
            header, labels, steps, redactor = shaping.apply(trace)
            shaped.append((labels is not None, redactor))
            yield TraceDocument(header, steps, labels, where)

    def unchanged() -> None:
        if file_digest(local) != before:
            raise InputError(
                "the file changed while it was read: nothing was stored",
                path=where,
                hint="ingest it again once nothing writes to it",
            )

    results = write_traces(store, documents(), before_commit=unchanged)
    return [
        IngestSummary(
            path=where,
            importer=name,
            reason=reason,
            trace_id=r.trace_id,
            steps=r.steps,
            appended=r.appended,
            already_present=r.already_present,
            labels=labels,
            redacted=redactor.replaced if redactor is not None else None,
        )
        for r, (labels, redactor) in zip(results, shaped, strict=True)
    ]


def _rescanned(path: Path, name: str) -> Iterator[ImportedTrace]:
    for trace in open_traces(path, name):
        trace.scan()
        yield trace


def iter_files(root: Path, recursive: bool) -> Iterator[Path]:
    """Files under a directory in a stable order, hidden files and folders skipped, and the files
    another file reads in: a Claude Code subagent's, that its session's file reads (the session is
    one trace), an OpenHands conversation's events, that its ``base_state.json`` reads."""
    pattern = "**/*" if recursive else "*"
    for path in sorted(root.glob(pattern)):
        if (
            path.is_file()
            and not any(part.startswith(".") for part in path.relative_to(root).parts)
            and not read_with_session(path)
            and not read_with_state(path)
        ):
            yield path
