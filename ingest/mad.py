"""The MAST/MAD corpus file: a JSON array of records, each holding one framework's raw log.

Two record shapes are read. The human-labelled file: ``round, mas_name, benchmark_name, trace_id,
trace (the raw log string), annotations (failure-mode votes)``. The full corpus:
``mas_name, llm_name, benchmark_name, trace_id, trace {key, index, trajectory}, mast_annotation``.
The array is streamed record by record; each record's log goes to its framework's parser.

Labels never enter the steps: ``annotations`` / ``mast_annotation`` go to the sidecar labels record
(a bare ``NaN`` vote becomes null) and the header records the removal (rule ``mad.annotations``).
Trace ids: ``mad-human-<trace_id>`` and ``mad-<trace.key>-<trace_id>`` (unique keys in each file).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, head_text, text_digest
from ingest.frameworks import Source, for_corpus_record
from ingest.jsonstream import JsonReader, top_level_kind
from schemas.trace import TraceHeader, WithheldItem

LABEL_RULE = "mad.annotations: the corpus's failure-mode votes or judge labels beside each log"


def _no_nan(value: Any) -> Any:
    """Bare NaN (invalid strict JSON, present in the MAD file) becomes null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


def corpus_text(record: dict[str, Any]) -> str | None:
    """A record's raw execution log, for either shape (None when absent)."""
    trace = record.get("trace")
    if isinstance(trace, dict):
        trace = trace.get("trajectory")
    return trace if isinstance(trace, str) else None


def corpus_key(record: dict[str, Any]) -> str:
    """A record's unique key in its file: its trace id (human file) or trace.key + trace id."""
    trace = record.get("trace")
    if isinstance(trace, dict):
        return f"{trace.get('key')}-{record.get('trace_id')}"
    return f"human-{record.get('trace_id')}"


def iter_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, record) for each object of the corpus array, streamed."""
    with path.open("rb") as stream:
        reader = JsonReader(stream, str(path))
        for n, record in enumerate(reader.array()):
            if not isinstance(record, dict):
                raise InputError(f"record {n} is not a JSON object", path=str(path))
            yield n, record
        reader.end()


class MadCorpusImporter:
    name = "mad"
    description = "MAST/MAD corpus file (human-labelled or full), one trace per record"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if top_level_kind(head) == "array" and re.search(r'"mas_name"\s*:', text) and '"trace' in text:
            return "a JSON array of records with 'mas_name' and 'trace' (the MAST/MAD corpus)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        for n, record in iter_records(path):
            yield self._trace(path, n, record)

    def _trace(self, path: Path, n: int, record: dict[str, Any]) -> ImportedTrace:
        where = f"{path} record {n}"
        text = corpus_text(record)
        if text is None:
            raise InputError("the record has no trace text", path=str(path), field=f"[{n}].trace")
        mas, bench = str(record.get("mas_name", "")), str(record.get("benchmark_name", ""))
        picked = for_corpus_record(mas, bench, text[:65536])
        if picked is None:
            raise InputError(
                f"no parser recognises the log of framework '{mas}'",
                path=str(path),
                field=f"[{n}].mas_name",
                hint="known frameworks: AppWorld, HyperAgent, AG2, ChatDev, MetaGPT, Magentic-One, OpenManus",
            )
        fmt, reason = picked
        label_key = "mast_annotation" if "mast_annotation" in record else "annotations"
        labels = {label_key: _no_nan(record.get(label_key))} if label_key in record else {}
        kept = {k: v for k, v in record.items() if k not in ("trace", "annotations", "mast_annotation")}
        if isinstance(record.get("trace"), dict):
            kept.update({f"trace.{k}": v for k, v in record["trace"].items() if k != "trajectory"})
        header = TraceHeader(
            trace_id=f"mad-{corpus_key(record)}",
            source=f"{path}#{n}",
            framework=fmt.framework,
            metadata={
                **_no_nan(kept),
                "record_index": n,
                "parser": fmt.name,
                "parser_reason": reason,
                "trace_sha256": text_digest(text),
            },
            withheld=[
                WithheldItem(what="failure_mode_labels", where=f"source field '{label_key}'", rule=LABEL_RULE)
            ]
            if labels
            else [],
        )
        source = Source(where=where, text=text)

        def steps(facts: Facts) -> Iterator:
            return fmt.parse(source, facts, StepBuilder(where))

        return ImportedTrace(importer=self.name, header=header, steps=steps, labels=labels)


IMPORTER = MadCorpusImporter()
