"""Importers: source logs (framework raw logs, corpora, OpenTelemetry, Inspect, canonical JSONL)
into canonical traces.

The front door for everyone else:

- ``registry`` — importers by name; ``detect(path) -> (name, reason)``;
- ``open_traces(path, fmt="auto")`` — the traces of a file, streamed (:class:`ImportedTrace`:
  ``.header``, ``.steps()``, ``.labels``, ``.importer``);
- ``ingest_path(store, path, fmt="auto", redact=False)`` — validate in full, then append.
"""

from ingest.base import ImportedTrace, Importer
from ingest.pipeline import IngestSummary, ingest_path
from ingest.redact import Redactor
from ingest.registry import detect, names, open_traces, register, registry

__all__ = [
    "ImportedTrace",
    "Importer",
    "IngestSummary",
    "Redactor",
    "detect",
    "ingest_path",
    "names",
    "open_traces",
    "register",
    "registry",
]
