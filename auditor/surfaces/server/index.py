"""The server's search index: a projection of traces and reports into tables built for filtering.

One row per trace (source, framework, service, time, step count, the latest report's decision,
findings, highest severity, risk score, outcome and attribution, and the distinct words of its
task and steps), one row per participant, one per report, one per facet of a report (each
detector, risk class and responsible agent it names) and one per labelled finding (its latest
feedback label, see ``auditor.audit.feedback``). It is a ``Projection`` like any other: it tracks the
last position it applied and rebuilds from zero on demand. On PostgreSQL the words are also
stored as a ``tsvector`` under a GIN full-text index.

The tables below are what the code reads and writes; the index's migrations create them and the
indexes the filters count through (``auditor/core/store/migrations/index``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    delete,
    func,
    select,
)
from sqlalchemy.engine import Connection

from auditor.audit.feedback import FEEDBACK_EVENT
from auditor.core.store.migrate import INDEX
from auditor.core.store.tables import clip
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
    Column("risk_score", Float, nullable=False),
    Column("outcome", String(20)),
    Column("outcome_source", String(20)),
    Column("agent", String(512)),
    Column("decisive_step", String(200)),
    Column("attribution_confidence", Float),
    Column("service", String(512)),
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
    Column("risk_score", Float, nullable=False),
    Column("outcome", String(20)),
    Column("agent", String(512)),
    Index("ix_server_reports_trace", "trace_id", "position"),
    Index("ix_server_reports_position", "position"),
    Index("ix_server_reports_risk", "risk_score", "position"),
    Index("ix_server_reports_decision", "decision", "position"),
    Index("ix_server_reports_outcome", "outcome", "position"),
    Index("ix_server_reports_created", "created_at"),
)
facet_rows = Table(  # facet: detector, risk_class or agent (lower case); one row per distinct value
    "server_report_facets",
    meta,
    Column("report_id", String(200), primary_key=True),
    Column("facet", String(20), primary_key=True),
    Column("value", String(512), primary_key=True),
    Index("ix_server_report_facets_value", "facet", "value", "report_id"),
)
feedback_rows = Table(  # each labelled finding's latest label
    "server_feedback",
    meta,
    Column("report_id", String(200), primary_key=True),
    Column("finding_id", String(200), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("detector", String(200)),
    Column("label", String(20), nullable=False),
    Column("position", Integer, nullable=False),
    Index("ix_server_feedback_detector", "detector", "label"),
)
# The indexes each filter's count goes through (search.py), as the migrations create them.
Index("ix_server_traces_framework_lower", func.lower(trace_rows.c.framework), trace_rows.c.position)
Index("ix_server_traces_severity", trace_rows.c.max_severity, trace_rows.c.position)
Index("ix_server_traces_findings", trace_rows.c.findings, trace_rows.c.position)
Index("ix_server_participants_name_trace", participant_rows.c.name, participant_rows.c.trace_id)
Index("ix_server_traces_risk", trace_rows.c.risk_score, trace_rows.c.position)
Index("ix_server_traces_outcome", trace_rows.c.outcome, trace_rows.c.position)
Index("ix_server_traces_decision", trace_rows.c.decision, trace_rows.c.position)
Index("ix_server_traces_service_lower", func.lower(trace_rows.c.service), trace_rows.c.position)
Index("ix_server_traces_report", trace_rows.c.report_id)
_ROW_KEYS = [c.name for c in trace_rows.columns]


def _clipped(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    return {k: clip(v, table.c[k]) for k, v in row.items()}


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


def service_of(header: dict[str, Any]) -> str | None:
    """The service that ran the trace: ``service.name`` in the header's metadata (where a client
    declared its resource), else, for a trace assembled from spans (its metadata names the OTel
    trace id), the framework, which the span importers read from that resource attribute."""
    metadata = header.get("metadata") or {}
    named = metadata.get("service.name") or metadata.get("service")
    if isinstance(named, str) and named:
        return named[:512]
    return header.get("framework") if "otel_trace_id" in metadata else None


def triage_of(report: dict[str, Any]) -> dict[str, Any]:
    """What a report gives its trace's row to sort and filter by: risk, outcome, attribution."""
    outcome = report.get("outcome") or {}
    attribution = report.get("attribution") or {}
    return {
        "risk_score": float(report.get("risk_score") or 0.0),
        "outcome": outcome.get("value"),
        "outcome_source": outcome.get("source"),
        "agent": (attribution.get("agent") or "")[:512] or None,
        "decisive_step": attribution.get("step_id"),
        "attribution_confidence": attribution.get("confidence"),
    }


def facets_of(report: dict[str, Any]) -> set[tuple[str, str]]:
    """The (facet, value) pairs a report is found by: each finding's detector (the engine for an
    auditor agent's own findings, as feedback counts it) and risk class, and every responsible
    agent, the attribution's and each finding's, in lower case."""
    out: set[tuple[str, str]] = set()
    agent = (report.get("attribution") or {}).get("agent")
    for finding in report.get("findings") or []:
        out.add(("detector", finding.get("detector") or report.get("engine") or "unknown"))
        out.add(("risk_class", finding["risk_class"]))
        if finding.get("responsible_participant"):
            out.add(("agent", finding["responsible_participant"].lower()))
    if agent:
        out.add(("agent", agent.lower()))
    return {(facet, value[:512]) for facet, value in out}


class SearchProjection:
    """Traces, participants and reports in filterable tables (see the module docstring)."""

    name = "server_search"
    event_types = ("TraceStarted", "StepRecorded", "ReportFiled", FEEDBACK_EVENT)

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
        for table in (participant_rows, report_rows, trace_rows, facet_rows, feedback_rows):
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
            elif ev.type == FEEDBACK_EVENT:
                batch.feedback(ev)
        batch.flush()


class _Batch:
    """Rows touched by one batch of events, written once at the end."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.rows: dict[str, dict[str, Any]] = {}
        self.new_participants: list[dict[str, str]] = []
        self.new_reports: list[dict[str, Any]] = []
        self.new_facets: list[dict[str, str]] = []
        self.labels: dict[tuple[str, str], dict[str, Any]] = {}

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
            "service": service_of(h),
            **triage_of({}),
            "_new": True,
        }

    def step(self, ev: RecordedEvent) -> None:
        r = self.row(ev.payload["trace_id"])
        if r is None:
            return
        step = ev.payload["step"]
        r["steps"] += 1
        actor = step["actor"]
        lowered = r.setdefault(
            "_lower", {clip(p.lower(), participant_rows.c.name) for p in r["participants"]}
        )
        for name in [actor, *(step.get("recipients") or [])]:
            if name not in r["participants"]:
                r["participants"].append(name)
            key = clip(name.lower(), participant_rows.c.name)
            if key not in lowered:
                lowered.add(key)
                self.new_participants.append({"trace_id": r["trace_id"], "name": key})
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
        triage = triage_of(report)
        self.new_facets += [
            {"report_id": report["report_id"], "facet": f, "value": v} for f, v in sorted(facets_of(report))
        ]
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
                "created_at": utc_iso(report.get("created_at")) or report.get("created_at"),
                "valid": None if "ok" not in validation else int(bool(validation["ok"])),
                "risk_score": triage["risk_score"],
                "outcome": triage["outcome"],
                "agent": triage["agent"],
            }
        )
        r = self.row(report["trace_id"])
        if r is not None:  # the latest report of a trace decides its findings, severity and triage
            r.update(
                report_id=report["report_id"],
                reports=r["reports"] + 1,
                decision=report.get("decision"),
                findings=len(findings),
                max_severity=severity,
                **triage,
            )

    def feedback(self, ev: RecordedEvent) -> None:
        p = ev.payload
        self.labels[(p["report_id"], p["finding_id"])] = {
            "report_id": p["report_id"],
            "finding_id": p["finding_id"],
            "trace_id": p["trace_id"],
            "detector": p.get("detector"),
            "label": p["label"],
            "position": ev.global_position,
        }

    def flush(self) -> None:
        for r in self.rows.values():
            words = sorted(r["words"])[:MAX_WORDS]
            values = {k: r[k] for k in _ROW_KEYS}
            values["participants"] = json.dumps(r["participants"], ensure_ascii=False)
            values["words"] = " " + " ".join(words) + " "
            values = _clipped(trace_rows, values)
            if r["_new"]:
                self.conn.execute(trace_rows.insert().values(**values))
            else:
                self.conn.execute(
                    trace_rows.update().where(trace_rows.c.trace_id == r["trace_id"]).values(**values)
                )
        for table, rows, key in (
            (participant_rows, self.new_participants, ("trace_id", "name")),
            (report_rows, self.new_reports, ("report_id",)),
            (facet_rows, self.new_facets, ("report_id", "facet", "value")),
        ):
            if rows:
                self.conn.execute(table.insert(), _unique([_clipped(table, r) for r in rows], key))
        self._flush_labels()

    def _flush_labels(self) -> None:
        """The latest label of each finding replaces the one stored before it."""
        f = feedback_rows.c
        for (report_id, finding_id), row in self.labels.items():
            self.conn.execute(
                delete(feedback_rows).where(and_(f.report_id == report_id, f.finding_id == finding_id))
            )
            self.conn.execute(feedback_rows.insert().values(**_clipped(feedback_rows, row)))


def _unique(rows: list[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    seen: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        seen.setdefault(tuple(r[k] for k in key), r)
    return list(seen.values())
