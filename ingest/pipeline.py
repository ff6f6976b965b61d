"""From a file to the store: validate every trace in full, then append, idempotently.

Bad input raises before anything is appended (nothing partial). Appending the same file again
appends nothing new: step events carry idempotency keys derived from trace and step ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ingest.base import ImportedTrace
from ingest.redact import Redactor
from ingest.registry import detect, get, open_traces

KEEP_OPEN = 64  # traces of one file kept between the check pass and the append pass


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


def check(path: Path, fmt: str) -> list[ImportedTrace] | None:
    """Validate every trace of the file; return them when few enough to keep for the append."""
    kept: list[ImportedTrace] | None = []
    for trace in open_traces(path, fmt):
        trace.scan()
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
) -> list[IngestSummary]:
    """Import every trace of one file into ``store`` (an auditor.store.EventStore).

    ``patterns`` adds redaction patterns (name → regex with an optional ``value`` group);
    ``source`` names the origin when the file is a spool (stdin)."""
    from auditor.traces import append_trace

    path = Path(path)
    name, reason = choose(path, fmt)
    traces = check(path, name)
    summaries = []
    for trace in traces if traces is not None else _rescanned(path, name):
        header, steps, labels = trace.header, trace.steps(), trace.labels
        if source is not None and header.source in (str(path), path.name):
            header = header.model_copy(update={"source": source})
        counts = None
        if redact:
            redactor = Redactor(patterns)
            header = redactor.header(header)
            labels = redactor.labels(labels) if labels is not None else None
            steps = map(redactor.step, steps)
        result = append_trace(store, header, steps, labels)
        if redact:
            counts = redactor.replaced
        summaries.append(
            IngestSummary(
                path=str(path),
                importer=name,
                reason=reason,
                trace_id=result.trace_id,
                steps=result.steps,
                appended=result.appended,
                already_present=result.already_present,
                labels=labels is not None,
                redacted=counts,
            )
        )
    return summaries


def _rescanned(path: Path, name: str) -> Iterator[ImportedTrace]:
    for trace in open_traces(path, name):
        trace.scan()
        yield trace


def iter_files(root: Path, recursive: bool) -> Iterator[Path]:
    """Files under a directory in a stable order, hidden files and folders skipped."""
    pattern = "**/*" if recursive else "*"
    for path in sorted(root.glob(pattern)):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts):
            yield path
