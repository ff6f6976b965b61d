"""Triage listings of the server's search index on PostgreSQL at scale: riskiest first, and each
triage filter (outcome, decision, detector, risk class, responsible agent, service, minimum risk),
as `GET /api/traces` and `GET /api/reports` run them.

The index is filled by its own projection code (``SearchProjection.apply``) from ``--traces``
synthetic TraceStarted and ReportFiled events (drawn values: risk scores, outcomes, attributions,
0-3 findings from 12 detectors), in a scratch schema dropped afterwards; the queries go through
``SearchIndex`` on the server's read engine (sequential scans off, as `auditor serve` reads), one
client at a time, so the figures are the statements' own cost.

    python benchmarks/triage_index_bench.py [--pg URL] [--traces 10000] [--repeat 40]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa

from auditor.core.store import open_store, resolve_url
from auditor.surfaces.server.cache import read_engine
from auditor.surfaces.server.index import SearchProjection
from auditor.surfaces.server.search import ReportQuery, SearchIndex, TraceQuery, Triage
from schemas.events import RecordedEvent

DEFAULT_URL = os.environ.get(
    "AUDITOR_TEST_PG_URL", "postgresql://auditor:auditor@127.0.0.1:5432/auditor_test"
)
DETECTORS = [f"detector_{i}" for i in range(12)]
RISK_CLASSES = ["policy_violation", "task_failure", "unverified_relay", "information_state_drift", "other"]
AGENTS = [f"agent_{i}" for i in range(20)]
SERVICES = [f"service-{i}" for i in range(10)]


def events(n: int, rng: random.Random) -> list[RecordedEvent]:
    """A TraceStarted and a ReportFiled event for each of ``n`` traces."""
    out: list[RecordedEvent] = []
    for i in range(n):
        tid = f"bench-{i:06d}"
        header = {"trace_id": tid, "framework": "bench", "metadata": {"service.name": rng.choice(SERVICES)}}
        findings = [
            {"detector": rng.choice(DETECTORS), "risk_class": rng.choice(RISK_CLASSES), "severity": "high",
             "responsible_participant": rng.choice(AGENTS)}
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))
        ]  # fmt: skip
        failed = bool(findings) and rng.random() < 0.6
        report = {
            "report_id": f"rpt-{i:06d}", "trace_id": tid, "engine": "rules", "graph_mode": "annotated",
            "decision": "risk_identified" if findings else "no_material_risk", "findings": findings,
            "risk_score": round(rng.random(), 4) if findings else 0.0, "created_at": "2026-01-01T00:00:00+00:00",
            "outcome": {"value": "failed" if failed else "unknown", "source": "inferred" if failed else "none"},
            "attribution": {"agent": rng.choice(AGENTS), "step_id": "s3", "confidence": 0.4} if failed else None,
        }  # fmt: skip
        for offset, (kind, payload) in enumerate(
            [("TraceStarted", {"header": header}), ("ReportFiled", {"trace_id": tid, "report": report})]
        ):
            out.append(_event(2 * i + offset + 1, kind, payload))
    return out


def _event(position: int, kind: str, payload: dict) -> RecordedEvent:
    return RecordedEvent(
        global_position=position, stream_id="bench", stream_version=position, type=kind, schema_version=1,
        payload=payload, metadata={}, idempotency_key=None, prev_hash="", hash="", recorded_at="2026-01-01T00:00:00+00:00",
    )  # fmt: skip


def timed(call, repeat: int) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
    """(p50, p95) in milliseconds and the rows of the page."""
    times, rows = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = len(call().rows)
        times.append(1000 * (time.perf_counter() - start))
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default=DEFAULT_URL)
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    base = resolve_url(args.pg)
    schema = f"triage_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    store = open_store(f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}")
    try:
        projection = SearchProjection()
        started = time.perf_counter()
        rows = events(args.traces, random.Random(7))
        with store.write_transaction() as conn:
            projection.create(conn)
            for at in range(0, len(rows), 2000):
                projection.apply(conn, rows[at : at + 2000])
            conn.execute(sa.text("ANALYZE"))
        print(f"{args.traces:,} traces indexed in {time.perf_counter() - started:.1f} s")
        index = SearchIndex(store, read_engine(store, 4))
        index.position = 2**62  # nothing to catch up with: the events never went to the store
        cases = {
            "traces riskiest": TraceQuery(order="riskiest"),
            "traces riskiest, offset 9,000": TraceQuery(order="riskiest", offset=min(9000, args.traces - 50)),
            "traces riskiest, outcome failed": TraceQuery(order="riskiest", triage=Triage(outcome="failed")),
            "traces riskiest, detector": TraceQuery(order="riskiest", triage=Triage(detector=DETECTORS[3])),
            "traces riskiest, risk class": TraceQuery(
                order="riskiest", triage=Triage(risk_class="task_failure")
            ),
            "traces riskiest, agent": TraceQuery(order="riskiest", triage=Triage(agent=AGENTS[5].upper())),
            "traces riskiest, service": TraceQuery(order="riskiest", triage=Triage(service=SERVICES[2])),
            "traces risk >= 0.9": TraceQuery(order="riskiest", triage=Triage(min_risk=0.9)),
            "traces newest, failed + detector": TraceQuery(
                triage=Triage(outcome="failed", detector=DETECTORS[1])
            ),
            "traces exact total, detector": TraceQuery(
                order="riskiest", exact_total=True, triage=Triage(detector=DETECTORS[3])
            ),
        }
        report_cases = {
            "reports riskiest": ReportQuery(order="riskiest"),
            "reports riskiest, detector + agent": ReportQuery(
                order="riskiest", triage=Triage(detector=DETECTORS[4], agent=AGENTS[1])
            ),
        }
        print(f"{'listing (page of 50)':40} {'p50 ms':>8} {'p95 ms':>8} {'rows':>5}")
        for name, q in cases.items():
            p50, p95, n = timed(lambda q=q: index.traces(q), args.repeat)
            print(f"{name:40} {p50:8.1f} {p95:8.1f} {n:5}")
        for name, q in report_cases.items():
            p50, p95, n = timed(lambda q=q: index.reports(q), args.repeat)
            print(f"{name:40} {p50:8.1f} {p95:8.1f} {n:5}")
        print(f"1-minute load average: {os.getloadavg()[0]:.1f}")
    finally:
        store.close()
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


if __name__ == "__main__":
    main()
