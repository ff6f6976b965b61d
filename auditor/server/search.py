"""Queries over the search index: filtered, ordered, paged trace and report listings.

Text search matches words: every word of the query must begin a word of the trace's task, source
or step content (PostgreSQL answers through its GIN full-text index, SQLite through the same
space-delimited word list).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, select, text
from sqlalchemy.sql.elements import ColumnElement

from auditor.server.index import (
    SEVERITY_NAME,
    SEVERITY_RANK,
    WORD,
    SearchProjection,
    participant_rows,
    report_rows,
    trace_rows,
    utc_iso,
)
from auditor.store import EventStore, catch_up


@dataclass(frozen=True)
class TraceQuery:
    source: str | None = None
    framework: str | None = None
    participant: str | None = None
    text: str | None = None
    has_findings: bool | None = None
    severity: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    order: str = "newest"
    offset: int = 0
    limit: int = 50


class SearchIndex:
    """The projection kept fresh: a request first catches up with whatever the store gained."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.projection = SearchProjection()
        self._lock = threading.Lock()
        self.position = 0

    def refresh(self) -> None:
        last = self.store.last_position()
        if last <= self.position:
            return
        with self._lock:
            if last > self.position:
                catch_up(self.store, self.projection)
                self.position = last

    def traces(self, q: TraceQuery) -> tuple[int, list[dict[str, Any]]]:
        self.refresh()
        where = self._trace_filters(q)
        order = trace_rows.c.position.desc() if q.order == "newest" else trace_rows.c.position.asc()
        cols = [c for c in trace_rows.c if c.name != "words"]
        with self.store.engine.connect() as conn:
            total = conn.execute(select(func.count()).select_from(trace_rows).where(*where)).scalar_one()
            rows = conn.execute(select(*cols).where(*where).order_by(order).offset(q.offset).limit(q.limit))
            return total, [trace_summary(dict(r._mapping)) for r in rows]

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        self.refresh()
        cols = [c for c in trace_rows.c if c.name != "words"]
        with self.store.engine.connect() as conn:
            row = conn.execute(select(*cols).where(trace_rows.c.trace_id == trace_id)).first()
        return trace_summary(dict(row._mapping)) if row else None

    def reports(
        self, trace_id: str | None, decision: str | None, offset: int, limit: int
    ) -> tuple[int, list[dict[str, Any]]]:
        self.refresh()
        where = []
        if trace_id:
            where.append(report_rows.c.trace_id == trace_id)
        if decision:
            where.append(report_rows.c.decision == decision)
        with self.store.engine.connect() as conn:
            total = conn.execute(select(func.count()).select_from(report_rows).where(*where)).scalar_one()
            rows = conn.execute(
                select(report_rows)
                .where(*where)
                .order_by(report_rows.c.position.desc())
                .offset(offset)
                .limit(limit)
            )
            return total, [report_summary(dict(r._mapping)) for r in rows]

    def _trace_filters(self, q: TraceQuery) -> list[ColumnElement[bool]]:
        c = trace_rows.c
        where: list[ColumnElement[bool]] = []
        if q.source:
            where.append(func.lower(c.source).contains(q.source.lower(), autoescape=True))
        if q.framework:
            where.append(func.lower(c.framework) == q.framework.lower())
        if q.participant:
            p = participant_rows.c
            where.append(exists().where(and_(p.trace_id == c.trace_id, p.name == q.participant.lower())))
        if q.has_findings is not None:
            where.append(c.findings > 0 if q.has_findings else c.findings == 0)
        if q.severity:
            where.append(c.max_severity >= SEVERITY_RANK[q.severity])
        if q.since:
            where.append(c.time >= utc_iso(q.since))
        if q.until:
            where.append(c.time < utc_iso(q.until))
        if q.text:
            where.extend(self._text_filter(q.text))
        return where

    def _text_filter(self, query: str) -> list[ColumnElement[bool]]:
        words = [w.lower() for w in WORD.findall(query)]
        if not words:
            return [text("1 = 0")]  # nothing searchable in the query: nothing matches
        if self.store.dialect == "postgresql":
            tsquery = " & ".join(f"{w}:*" for w in words)
            return [
                text("to_tsvector('simple', server_traces.words) @@ to_tsquery('simple', :tsq)").bindparams(
                    tsq=tsquery
                )
            ]
        return [trace_rows.c.words.contains(" " + w, autoescape=True) for w in words]


def trace_summary(r: dict[str, Any]) -> dict[str, Any]:
    r["participants"] = json.loads(r["participants"])
    r["max_severity"] = SEVERITY_NAME.get(r["max_severity"])
    r.pop("position", None)
    return r


def report_summary(r: dict[str, Any]) -> dict[str, Any]:
    r["max_severity"] = SEVERITY_NAME.get(r["max_severity"])
    r["valid"] = None if r["valid"] is None else bool(r["valid"])
    r.pop("position", None)
    return r
