"""Queries over the search index: filtered, ordered, paged trace and report listings.

Text search matches words: every word of the query must begin a word of the trace's task, source
or step content (PostgreSQL answers through its GIN full-text index, SQLite through the same
space-delimited word list). Callers that have just read the store's head pass it (see
``cache.StoreHead``), so a request costs no second look at the store.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Table, and_, exists, func, select, text
from sqlalchemy.engine import Engine
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

    def __init__(self, store: EventStore, reader: Engine | None = None) -> None:
        self.store = store
        self.reader = reader or store.engine  # see cache.read_engine
        self.projection = SearchProjection()
        self._lock = threading.Lock()
        self.position = 0

    def refresh(self, head: int | None = None) -> None:
        """Catch up with the store, whose last position is ``head`` when the caller just read it."""
        last = self.store.last_position() if head is None else head
        if last <= self.position:
            return
        with self._lock:
            if last > self.position:
                catch_up(self.store, self.projection)
                self.position = last

    def traces(self, q: TraceQuery, head: int | None = None) -> tuple[int, list[dict[str, Any]]]:
        self.refresh(head)
        where = self._trace_filters(q)
        order = trace_rows.c.position.desc() if q.order == "newest" else trace_rows.c.position.asc()
        by_index = bool(q.text) and self.store.dialect == "postgresql"
        return _page(self.reader, trace_rows, where, order, q.offset, q.limit, trace_summary, by_index)

    def trace(self, trace_id: str, head: int | None = None) -> dict[str, Any] | None:
        self.refresh(head)
        with self.reader.connect() as conn:
            row = conn.execute(select(*_shown(trace_rows)).where(trace_rows.c.trace_id == trace_id)).first()
        return trace_summary(dict(row._mapping)) if row else None

    def reports(
        self, trace_id: str | None, decision: str | None, offset: int, limit: int, head: int | None = None
    ) -> tuple[int, list[dict[str, Any]]]:
        self.refresh(head)
        where = []
        if trace_id:
            where.append(report_rows.c.trace_id == trace_id)
        if decision:
            where.append(report_rows.c.decision == decision)
        order = report_rows.c.position.desc()
        return _page(self.reader, report_rows, where, order, offset, limit, report_summary)

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
            return [text("server_traces.words_tsv @@ to_tsquery('simple', :tsq)").bindparams(tsq=tsquery)]
        return [trace_rows.c.words.contains(" " + w, autoescape=True) for w in words]


def _shown(table: Table) -> list[Column]:
    return [c for c in table.c if c.name != "words"]


def _page(
    engine: Engine,
    table: Table,
    where: list[ColumnElement[bool]],
    order: ColumnElement[Any],
    offset: int,
    limit: int,
    shape: Callable[[dict[str, Any]], dict[str, Any]],
    by_index: bool = False,
) -> tuple[int, list[dict[str, Any]]]:
    """(total, one page of rows): the count rides along as a subquery, one round trip for both.

    ``by_index`` (a PostgreSQL full-text query) keeps the planner off sequential scans: it does
    not price un-TOASTing every trace's word vector, and for a common word would scan and
    decompress them all instead of counting from the GIN index (300 ms against 10 ms at 10,000
    traces). Every text query has that index to go through.
    """
    count = select(func.count()).select_from(table).where(*where).correlate(None)
    query = select(*_shown(table), count.scalar_subquery().label("_total")).where(*where)
    with engine.connect() as conn:
        if by_index:
            conn.exec_driver_sql("SET enable_seqscan = off")
        try:
            rows = [dict(r._mapping) for r in conn.execute(query.order_by(order).offset(offset).limit(limit))]
            total = rows[0]["_total"] if rows else (conn.execute(count).scalar_one() if offset else 0)
        finally:
            if by_index:
                conn.exec_driver_sql("RESET enable_seqscan")
    for r in rows:
        del r["_total"]
    return total, [shape(r) for r in rows]


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
