"""Streaming benchmark: sustained ingestion Kafka → PostgreSQL, and end-to-end audit latency.

    python benchmarks/stream_bench.py --bootstrap 127.0.0.1:19092 \
        --pg postgresql://auditor:auditor@127.0.0.1:5432/auditor_test

1. Ingestion: N steps are produced first, then one consumer (`auditor stream consume`, its own
   process) drains them into a fresh PostgreSQL schema; steps/s is measured from the first stored
   event to the last (and from process start, join included). CPU per 1,000 steps is the
   consumer's and its PostgreSQL backends' (found by application_name; the server's background
   processes are left out) over the same window, start-up and group join excluded, read from /proc
   while the store is polled with one indexed count.
2. Latency: traces arrive at a steady rate (default 100 per minute, 10 steps each); a consumer and
   a rules-engine worker run as separate processes; the latency of a trace is the time from its end
   record's broker timestamp to its report's timestamp on the reports topic. Prints p50/p95/max.
Every run uses fresh topics and a fresh schema, dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from auditor.core.store import open_store, resolve_url  # noqa: E402
from ingest.stream import StepPublisher  # noqa: E402
from schemas.trace import TraceHeader, TraceStep  # noqa: E402


@contextmanager
def fresh_schema(pg_url: str) -> Iterator[str]:
    import sqlalchemy as sa

    base = resolve_url(pg_url)
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def _ticks(pid: str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


BACKEND_TAG = "stream-bench-consumer"  # the consumer's application_name, to find its backends


def backend_cpu(store) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """CPU seconds so far of each PostgreSQL backend serving the consumer. Only those: the server
    is shared with other work, so summing every postgres process would count that work too."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        query = sa.text("SELECT pid FROM pg_stat_activity WHERE application_name = :tag")
        pids = [int(r[0]) for r in conn.execute(query, {"tag": BACKEND_TAG})]
    out = {}
    for pid in pids:
        try:
            out[pid] = _ticks(str(pid))
        except OSError:  # the backend has just exited
            continue
    return out


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by one process, all its threads."""
    return _ticks(str(pid))


def count_events(store, event_type: str) -> int:  # type: ignore[no-untyped-def]
    """One indexed count (the store's stats() scans the whole table, which would skew the figures)."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        query = sa.text("SELECT COUNT(*) FROM events WHERE type = :t")
        return int(conn.execute(query, {"t": event_type}).scalar_one())


def topics(bootstrap: str, partitions: int) -> dict[str, str]:
    from kafka.admin import KafkaAdminClient, NewTopic

    tag = uuid.uuid4().hex[:8]
    names = {n: f"bench-{n}-{tag}" for n in ("steps", "dlq", "closed", "reports", "alerts")}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(t, partitions, 1) for t in names.values()])
    admin.close()
    return names


def trace(tid: str, n: int) -> tuple[TraceHeader, list[TraceStep]]:
    header = TraceHeader(trace_id=tid, source="bench", task="reconcile the supplier invoice")
    actors = ("planner", "executor", "ledger_api")
    kinds = ("message", "tool_call", "tool_result")
    steps = [
        TraceStep(
            step_id=f"s{i}",
            index=i,
            actor=actors[i % 3],
            kind=kinds[i % 3],
            actor_kind="tool" if i % 3 == 2 else "agent",
            content=f"step {i}: invoice {tid} line {i} amount {i * 13 % 997} EUR checked against the ledger",
        )
        for i in range(n)
    ]
    return header, steps


def cli(store_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", store_url, "stream", *args]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(timeout=60)


def ingestion(bootstrap: str, pg_url: str, traces: int, steps: int, partitions: int, batch: int) -> None:
    t = topics(bootstrap, partitions)
    started = time.perf_counter()
    with StepPublisher(bootstrap, t["steps"], linger_ms=20, batch_size=256 * 1024) as pub:
        for i in range(traces):
            header, body = trace(f"ing-{i}", steps)
            pub.start_trace(header)
            for s in body:
                pub.step(header.trace_id, s)
            pub.end(header.trace_id)
    total = traces * steps
    print(
        f"produced {total} steps in {traces} traces ({partitions} partitions) in {time.perf_counter() - started:.1f}s"
    )
    with fresh_schema(pg_url) as url:
        store = open_store(url)
        args = ["consume", "--bootstrap", bootstrap, "--topic", t["steps"], "--group", f"g-{t['steps']}",
                "--dead-letter-topic", t["dlq"], "--closed-topic", t["closed"], "--max-batch", str(batch)]  # fmt: skip
        launched = time.perf_counter()
        tagged = f"{url}&application_name={BACKEND_TAG}"
        proc = subprocess.Popen(cli(tagged, *args), cwd=REPO, stderr=subprocess.DEVNULL)
        try:
            while (stored_at_start := count_events(store, "StepRecorded")) == 0:
                time.sleep(0.02)
            cpu_start, pg_start = process_cpu_seconds(proc.pid), backend_cpu(store)
            while count_events(store, "TraceClosed") < traces:
                time.sleep(0.2)
            cpu_end, pg_end = process_cpu_seconds(proc.pid), backend_cpu(store)
            load = os.getloadavg()[0]
        finally:
            stop([proc])
        done = time.perf_counter()
        events = list(store.read_all(types=["StepRecorded"]))
        first = events[0].recorded_at
        last = events[-1].recorded_at
        span = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
        assert len(events) == total, f"stored {len(events)} of {total} steps"
        measured = total - stored_at_start  # the steps stored inside the CPU window
        consumer_cpu = cpu_end - cpu_start
        pg_cpu = sum(t - pg_start.get(pid, 0.0) for pid, t in pg_end.items())  # a new backend: all of it
        print(f"ingestion: {total / span:,.0f} steps/s sustained (first to last stored step, {span:.2f}s); "
              f"{total / (done - launched):,.0f} steps/s from process start ({done - launched:.1f}s, join included); "
              f"batch {batch}")  # fmt: skip
        print(f"CPU per 1,000 steps while ingesting: consumer process {1000 * consumer_cpu / measured:.3f}s, "
              f"its PostgreSQL backends {1000 * pg_cpu / measured:.3f}s; load average {load:.1f} on {os.cpu_count()} cores; "
              f"a consumer with a core to itself: ~{measured / consumer_cpu:,.0f} steps/s")  # fmt: skip
        store.close()


def latency(
    bootstrap: str, pg_url: str, per_minute: float, seconds: float, steps: int, partitions: int
) -> None:
    from kafka import KafkaConsumer

    t = topics(bootstrap, partitions)
    with fresh_schema(pg_url) as url:
        common = ["--bootstrap", bootstrap, "--closed-topic", t["closed"]]
        procs = [
            subprocess.Popen(cli(url, "consume", *common, "--topic", t["steps"], "--group", f"g-{t['steps']}",
                                 "--dead-letter-topic", t["dlq"]), cwd=REPO, stderr=subprocess.DEVNULL),
            subprocess.Popen(cli(url, "workers", *common, "--group", f"w-{t['closed']}", "--reports-topic",
                                 t["reports"], "--alerts-topic", t["alerts"]), cwd=REPO, stderr=subprocess.DEVNULL),
        ]  # fmt: skip
        ends: dict[str, int] = {}
        reports: dict[str, int] = {}
        reader = KafkaConsumer(t["reports"], bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        try:
            with StepPublisher(bootstrap, t["steps"]) as pub:  # the clock starts once the pipeline answers
                header, body = trace("lat-warm", steps)
                pub.start_trace(header)
                for s in body:
                    pub.step(header.trace_id, s)
                pub.end(header.trace_id)
            deadline = time.monotonic() + 120
            while not reports and time.monotonic() < deadline:
                for recs in reader.poll(timeout_ms=500).values():
                    reports.update({json.loads(r.value)["trace_id"]: r.timestamp for r in recs})
            reports.clear()
            n = int(per_minute * seconds / 60)
            gap = 60.0 / per_minute
            with StepPublisher(bootstrap, t["steps"]) as pub:
                next_at = time.monotonic()
                for i in range(n):
                    header, body = trace(f"lat-{i}", steps)
                    pub.start_trace(header)
                    for s in body:
                        pub.step(header.trace_id, s)
                    ends[header.trace_id] = pub.end(header.trace_id).get(timeout=30).timestamp
                    next_at += gap
                    time.sleep(max(0.0, next_at - time.monotonic()))
            deadline = time.monotonic() + 60
            while len(reports) < n and time.monotonic() < deadline:
                for recs in reader.poll(timeout_ms=500).values():
                    for r in recs:
                        reports.setdefault(json.loads(r.value)["trace_id"], r.timestamp)
        finally:
            reader.close()
            stop(procs)
    lat = sorted((reports[tid] - ends[tid]) / 1000 for tid in ends if tid in reports)
    p95 = lat[max(0, round(0.95 * len(lat)) - 1)]
    print(f"latency end record → report on topic, {len(lat)}/{len(ends)} traces at {per_minute:g}/min, "
          f"{steps} steps each: p50 {statistics.median(lat):.3f}s  p95 {p95:.3f}s  max {lat[-1]:.3f}s")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default=os.environ.get("AUDITOR_TEST_KAFKA", "127.0.0.1:19092"))
    ap.add_argument("--pg", default=os.environ.get("AUDITOR_TEST_PG_URL"), help="PostgreSQL URL (required)")
    ap.add_argument("--traces", type=int, default=500)
    ap.add_argument("--steps", type=int, default=100, help="steps per trace in the ingestion run")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--per-minute", type=float, default=100.0)
    ap.add_argument("--latency-seconds", type=float, default=60.0)
    ap.add_argument("--skip", choices=["ingestion", "latency"], action="append", default=[])
    a = ap.parse_args()
    if not a.pg:
        ap.error("--pg (or AUDITOR_TEST_PG_URL) is required: the benchmark measures PostgreSQL")
    if "ingestion" not in a.skip:
        ingestion(a.bootstrap, a.pg, a.traces, a.steps, a.partitions, a.batch)
    if "latency" not in a.skip:
        latency(a.bootstrap, a.pg, a.per_minute, a.latency_seconds, 10, a.partitions)


if __name__ == "__main__":
    main()
