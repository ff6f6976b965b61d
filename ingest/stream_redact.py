"""Redaction on the Kafka path: each parsed record is redacted before its batch is stored.

A trace's records arrive one by one over many batches, so each open trace keeps one
:class:`~ingest.redact.Redactor` in memory (a value gets one placeholder across all the trace's
records) until the trace closes. The mapping is never stored. A consumer that meets a trace the
store already holds (after a restart or a rebalance, the earlier mapping is gone with its process)
numbers new placeholders after the stored ones, so two values never share a placeholder; a value
seen before the restart gets a new one. A document record holds whole traces: each is redacted
on its own, as ``auditor ingest --redact`` would.
"""

from __future__ import annotations

import json

from auditor.core.store import EventStore
from ingest.redact import Redactor
from ingest.stream_records import Document, EndRecord, Parsed
from schemas.events import trace_stream
from schemas.trace import TraceHeader


class StreamRedaction:
    """The consumer's redaction: ``parsed`` before storing, ``forget`` when a trace closes."""

    def __init__(self, store: EventStore, patterns: dict[str, str] | None = None) -> None:
        self.store, self.patterns = store, dict(patterns or {})
        self._open: dict[str, Redactor] = {}

    def parsed(self, parsed: Parsed) -> Parsed:
        item = parsed.item
        if isinstance(item, EndRecord):
            return parsed
        if isinstance(item, Document):
            traces = []
            for header, steps in item.traces:
                r = Redactor(self.patterns)
                traces.append((r.header(header), tuple(r.step(s) for s in steps)))
            return Parsed(parsed.trace_id, Document(item.importer, tuple(traces)))
        assert parsed.trace_id is not None, "a canonical record is keyed by its trace id"
        r = self._redactor(parsed.trace_id)
        return Parsed(parsed.trace_id, r.header(item) if isinstance(item, TraceHeader) else r.step(item))

    def forget(self, trace_id: str) -> None:
        self._open.pop(trace_id, None)

    def _redactor(self, trace_id: str) -> Redactor:
        r = self._open.get(trace_id)
        if r is None:
            r = Redactor(self.patterns)
            for event in self.store.read_stream(trace_stream(trace_id)):
                r.number_after(json.dumps(event.payload, ensure_ascii=False))
            self._open[trace_id] = r  # only once fully read: a failed read is retried whole
        return r
