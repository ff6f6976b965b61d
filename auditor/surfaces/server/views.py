"""What the routes serve, computed from the store and cached by stream version: step pages,
graphs in either mode, and rendered reports (a report and its trace never change once stored)."""

from __future__ import annotations

import json
from itertools import islice
from typing import Any

from sqlalchemy import func, select

from auditor.core.errors import InputError, NotFoundError
from auditor.core.store import EventStore
from auditor.core.store.reports import load_report, report_stream
from auditor.core.store.tables import events
from auditor.core.store.traces import load_trace
from auditor.surfaces.server.cache import StreamVersions, VersionedCache
from schemas.events import trace_stream

REPORT_MEDIA = {
    "json": "application/json",
    "md": "text/markdown; charset=utf-8",
    "sarif": "application/sarif+json",
    "html": "text/html; charset=utf-8",
}


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


class Views:
    """Serialised views, each computed once per (stream, version) and kept in a small LRU."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._versions = StreamVersions(store)
        self._steps: VersionedCache[bytes] = VersionedCache(256)
        self._graphs: VersionedCache[bytes] = VersionedCache(32)
        self._reports: VersionedCache[tuple[str, str]] = VersionedCache(128)

    def _version(self, trace_id: str, head: int) -> int:
        version = self._versions.get(trace_stream(trace_id), head)
        if version == 0:
            raise NotFoundError(
                f"no trace with id '{trace_id}' in the store", hint="run 'auditor traces list'"
            )
        return version

    def steps(self, trace_id: str, offset: int, limit: int, head: int) -> bytes:
        """One page of steps in index order, as JSON bytes: ``{total, offset, limit, steps}``."""
        version = self._version(trace_id, head)

        def compute() -> bytes:
            steps = []
            # version 1 is the TraceStarted header; step n (0-based, appended in order) is version n + 2
            events = self.store.read_stream(trace_stream(trace_id), from_version=offset + 2)
            for ev in islice((e for e in events if e.type == "StepRecorded"), limit):
                steps.append(ev.payload["step"])
            return _dumps(
                {"trace_id": trace_id, "total": self._step_count(trace_id), "offset": offset, "steps": steps}
            )

        return self._steps.get((trace_id, version, offset, limit), compute)

    def _step_count(self, trace_id: str) -> int:
        with self.store.engine.connect() as conn:
            return conn.execute(
                select(func.count())
                .select_from(events)
                .where(events.c.stream_id == trace_stream(trace_id), events.c.type == "StepRecorded")
            ).scalar_one()

    def graph(self, trace_id: str, mode: str, head: int) -> bytes:
        """The interaction graph as node-link JSON bytes, in ``annotated`` or ``topology`` mode."""
        version = self._version(trace_id, head)

        def compute() -> bytes:
            from graph import build_graph, graph_digest, graph_to_node_link

            ig = build_graph(load_trace(self.store, trace_id), mode)
            if ig is None:
                raise InputError(
                    "graph mode 'none' has no graph", field="mode", hint="use annotated or topology"
                )
            data = graph_to_node_link(ig)
            data["digest"] = graph_digest(ig, data)
            return _dumps(data)

        return self._graphs.get((trace_id, version, mode), compute)

    def tests(self, trace_id: str, head: int) -> bytes:
        """A coding run's test timeline (``auditor traces tests``) as JSON bytes."""
        version = self._version(trace_id, head)

        def compute() -> bytes:
            from auditor.audit.test_timeline import as_json, timeline

            return _dumps({"trace_id": trace_id, **as_json(timeline(load_trace(self.store, trace_id)))})

        return self._graphs.get((trace_id, version, "tests"), compute)

    def report(self, report_id: str, fmt: str, head: int) -> tuple[str, str]:
        """The report rendered in ``fmt``: (body, media type)."""
        if fmt not in REPORT_MEDIA:
            raise InputError(
                f"unknown report format '{fmt}'",
                field="format",
                hint=f"valid formats: {', '.join(REPORT_MEDIA)}",
            )
        if self._versions.get(report_stream(report_id), head) == 0:
            raise NotFoundError(f"no report with id '{report_id}'", hint="run 'auditor reports list'")

        def compute() -> tuple[str, str]:
            from auditor.audit.report.render import render

            report = load_report(self.store, report_id)
            if fmt == "json":
                return report.model_dump_json(), REPORT_MEDIA[fmt]
            return render(report, load_trace(self.store, report.trace_id), fmt), REPORT_MEDIA[fmt]

        return self._reports.get((report_id, fmt), compute)

    def validation(self, report_id: str) -> dict[str, Any] | None:
        """The validator's record filed with the report (every evidence unit resolved or not)."""
        for ev in self.store.read_stream(report_stream(report_id)):
            if ev.type == "ReportFiled":
                return ev.payload.get("validation")
        raise NotFoundError(f"no report with id '{report_id}'", hint="run 'auditor reports list'")
