"""The server's search index: a projection of traces and reports into tables built for filtering.

One row per trace (source, framework, time, step count, the latest report's decision, findings
and highest severity, and the distinct words of its task and steps), one row per participant and
one per report. It is a ``Projection`` like any other: it tracks the last position it applied and
rebuilds from zero on demand. On PostgreSQL the words are also stored as a ``tsvector`` under a
GIN full-text index.

The tables below are what the code reads and writes; the index's migrations create them and the
indexes the filters count through (``auditor/store/migrations/index``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, Index, Integer, MetaData, String, Table, Text, delete, func, select
from sqlalchemy.engine import Connection

from auditor.store.migrate import INDEX
from schemas.events import RecordedEvent

SEVERITY_RANK = {"info": 1, "low": 2, "medium": 3, "high": 4, "critical": 5}
SEVERITY_NAME = {v: k for k, v in SEVERITY_RANK.items()}
WORD = re.compile(r"\w{2,40}", re.UNICODE)
MAX_WORDS = 20_000  # distinct words kept per trace: bounds the row and the full-text vector

meta = MetaData()
trace_rows = Table(
    "server_traces",
    meta,
    Column("trace_id", String(512), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("source", Text),
    Column("framework", String(200)),
    Column("task", Text),
    Column("steps", Integer, nullable=False),
    Column("participants", Text, nullable=False),
    Column("time", String(40), nullable=False),
    Column("time_basis", String(10), nullable=False),
    Column("report_id", String(200)),
    Column("reports", Integer, nullable=False),
    Column("decision", String(40)),
    Column("findings", Integer, nullable=False),
    Column("max_severity", Integer, nullable=False),
    Column("words", Text, nullable=False),
    Index("ix_server_traces_position", "position"),
    Index("ix_server_traces_time", "time"),
)
participant_rows = Table(
    "server_trace_participants",
    meta,
    Column("trace_id", String(512), primary_key=True),
    Column("name", String(512), primary_key=True),
)
report_rows = Table(
    "server_reports",
    meta,
    Column("report_id", String(200), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("position", Integer, nullable=False),
    Column("engine", String(200)),
    Column("graph_mode", String(20)),
    Column("decision", String(40)),
    Column("findings", Integer, nullable=False),
    Column("max_severity", Integer, nullable=False),
    Column("created_at", String(40)),
    Column("valid", Integer),
    Index("ix_server_reports_trace", "trace_id", "position"),
    Index("ix_server_reports_position", "position"),
)
# The indexes each filter's count goes through (search.py), as the migrations create them.
Index("ix_server_traces_framework_lower", func.lower(trace_rows.c.framework), trace_rows.c.position)
Index("ix_server_traces_severity", trace_rows.c.max_severity, trace_rows.c.position)
Index("ix_server_traces_findings", trace_rows.c.findings, trace_rows.c.position)
Index("ix_server_participants_name_trace", participant_rows.c.name, participant_rows.c.trace_id)
_ROW_KEYS = [c.name for c in trace_rows.columns]


def utc_iso(value: str | datetime | None) -> str | None:
    """An ISO time normalised to UTC (naive times are taken as UTC); None when it does not parse."""
    if value is None:
        return None
    try:
        moment = (
            value
            if isinstance(value, datetime)
            else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        )
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def words_of(*texts: str | None) -> set[str]:
    return {w.lower() for t in texts if t for w in WORD.findall(t)}


class SearchProjection:
    """Traces, participants and reports in filterable tables (see the module docstring)."""

    name = "server_search"
    event_types = ("TraceStarted", "StepRecorded", "ReportFiled")

    def __init__(self) -> None:
        self._created: set[str] = set()  # databases whose index schema this process made sure of

    def create(self, conn: Connection) -> None:
        """The index created at head where the database has none, and refused behind or ahead of
        this code; checked once per database and process, since a catch-up runs on every
        request after an append."""
        where = conn.engine.url.render_as_string(hide_password=True)
        if where in self._created:
            return
        INDEX.ensure(conn, where)
        self._created.add(where)

    def reset(self, conn: Connection) -> None:
        for table in (participant_rows, report_rows, trace_rows):
            conn.execute(delete(table))

    def apply(self, conn: Connection, events: Iterable[RecordedEvent]) -> None:
        batch = _Batch(conn)
        for ev in events:
            if ev.type == "TraceStarted":
                batch.start(ev)
            elif ev.type == "StepRecorded":
                batch.step(ev)
            elif ev.type == "ReportFiled":
                batch.report(ev)
        batch.flush()


class _Batch:
    """Rows touched by one batch of events, written once at the end."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.rows: dict[str, dict[str, Any]] = {}
        self.new_participants: list[dict[str, str]] = []
        self.new_reports: list[dict[str, Any]] = []

    def row(self, trace_id: str) -> dict[str, Any] | None:
        if trace_id not in self.rows:
            found = (
                self.conn.execute(select(trace_rows).where(trace_rows.c.trace_id == trace_id))
                .mappings()
                .first()
            )
            if found is None:
                return None
            r = dict(found)
            r["participants"] = json.loads(r["participants"])
            r["words"] = set(r["words"].split())
            r["_new"] = False
            self.rows[trace_id] = r
        return self.rows[trace_id]

    def start(self, ev: RecordedEvent) -> None:
        h = ev.payload["header"]
        tid = h["trace_id"]
        if self.row(tid) is not None:
            return
        self.rows[tid] = {
            "trace_id": tid,
            "position": ev.global_position,
            "source": h.get("source"),
            "framework": h.get("framework"),
            "task": (h.get("task") or "")[:500] or None,
            "steps": 0,
            "participants": [],
            "time": utc_iso(ev.recorded_at) or ev.recorded_at,
            "time_basis": "recorded",
            "report_id": None,
            "reports": 0,
            "decision": None,
            "findings": 0,
            "max_severity": 0,
            "words": words_of(tid, h.get("source"), h.get("framework"), h.get("task")),
            "_new": True,
        }

    def step(self, ev: RecordedEvent) -> None:
        r = self.row(ev.payload["trace_id"])
        if r is None:
            return
        step = ev.payload["step"]
        r["steps"] += 1
        actor = step["actor"]
        lowered = r.setdefault("_lower", {p.lower() for p in r["participants"]})
        for name in [actor, *(step.get("recipients") or [])]:
            if name not in r["participants"]:
                r["participants"].append(name)
            if name.lower() not in lowered:
                lowered.add(name.lower())
                self.new_participants.append({"trace_id": r["trace_id"], "name": name.lower()})
        if r["time_basis"] == "recorded" and (stamp := utc_iso(step.get("timestamp"))):
            r["time"], r["time_basis"] = stamp, "step"
        if len(r["words"]) < MAX_WORDS:
            tool = step.get("tool") or {}
            r["words"] |= words_of(actor, step.get("content"), tool.get("name"))

    def report(self, ev: RecordedEvent) -> None:
        report = ev.payload["report"]
        findings = report.get("findings") or []
        severity = max((SEVERITY_RANK.get(f.get("severity"), 0) for f in findings), default=0)
        validation = ev.payload.get("validation") or {}
        self.new_reports.append(
            {
                "report_id": report["report_id"],
                "trace_id": report["trace_id"],
                "position": ev.global_position,
                "engine": report.get("engine"),
                "graph_mode": report.get("graph_mode"),
                "decision": report.get("decision"),
                "findings": len(findings),
                "max_severity": severity,
                "created_at": report.get("created_at"),
                "valid": None if "ok" not in validation else int(bool(validation["ok"])),
            }
        )
        r = self.row(report["trace_id"])
        if r is not None:  # the latest report of a trace decides its findings and severity
            r.update(
                report_id=report["report_id"],
                reports=r["reports"] + 1,
                decision=report.get("decision"),
                findings=len(findings),
                max_severity=severity,
            )

    def flush(self) -> None:
        for r in self.rows.values():
            words = sorted(r["words"])[:MAX_WORDS]
            values = {k: r[k] for k in _ROW_KEYS}
            values["participants"] = json.dumps(r["participants"], ensure_ascii=False)
            values["words"] = " " + " ".join(words) + " "
            if r["_new"]:
                self.conn.execute(trace_rows.insert().values(**values))
            else:
                self.conn.execute(
                    trace_rows.update().where(trace_rows.c.trace_id == r["trace_id"]).values(**values)
                )
        if self.new_participants:
            self.conn.execute(participant_rows.insert(), _unique(self.new_participants, ("trace_id", "name")))
        if self.new_reports:
            self.conn.execute(report_rows.insert(), _unique(self.new_reports, ("report_id",)))


def _unique(rows: list[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    seen: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        seen.setdefault(tuple(r[k] for k in key), r)
    return list(seen.values())
