"""OpenTelemetry intake: spans accepted per second over OTLP/HTTP and from Kafka, and the delay from
a trace's root span ending to its stored report.

The service runs as deployed, in processes of its own (``auditor serve``; ``auditor stream consume``
and ``auditor stream workers``), over a SQLite store in a temporary folder unless ``--store`` names
one; the clients run here, so they never share the server's interpreter. The spans are those of the
toy GenAI agent in tests/otel_toy_agent.py (4 spans a run), encoded beforehand by the OpenTelemetry
SDK's own OTLP encoder, 25 runs (100 spans) to a request or record. Idle time and tick are the
service's own (``AUDITOR_SPAN_IDLE_S``).

- **http throughput**: ``--clients`` threads each POST ``--batches`` protobuf
  ExportTraceServiceRequests to /v1/traces; spans/s = spans answered 200 / wall time. Each 200
  means the spans are committed. The idle time is long, so this is acceptance, not the audits.
- **kafka throughput**: ``--records`` records of 100 spans, ``otlp_proto`` with no header and no
  key (what the collector's Kafka exporter writes by default), are produced first; then the
  consumer starts, and spans/s = spans stored from its first stored span to its last.
- **latency** (each mode): with ``--idle`` seconds of idle time, ``--traces`` agent runs are sent one
  by one (over HTTP, or as one record each keyed by trace id, as ``partition_traces_by_id`` writes
  them); a run's root span ends just before it is sent. The delay is from the send's answer to the
  ``AuditCompleted`` event of its trace (in-process audit for the server, the audit workers for
  Kafka).

    python benchmarks/otlp_bench.py [--mode http|kafka|both] [--clients 20] [--batches 5]
        [--records 1000] [--idle 2] [--traces 20] [--bootstrap 127.0.0.1:19192]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROTO = "application/x-protobuf"
RUNS_PER_BATCH = 25  # 4 spans a run: 100 spans a request or record


@dataclass
class Figures:
    """One mode's measurements."""

    mode: str
    spans: int
    wall: float
    delays: list[float]
    load: float  # the 1-minute load average as the throughput phase started


# -- the toy agent's spans -------------------------------------------------------------------------
def _recorder() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.otel_toy_agent import provider

    exporter = InMemorySpanExporter()
    return exporter, provider(SimpleSpanProcessor(exporter))


def agent_batches(n: int, tag: str) -> list[bytes]:
    """``n`` protobuf ExportTraceServiceRequests of ``RUNS_PER_BATCH`` toy-agent runs each."""
    from tests.otel_toy_agent import encoded_spans, run_agent

    exporter, tp = _recorder()
    out = []
    for b in range(n):
        for r in range(RUNS_PER_BATCH):
            run_agent(tp, order=f"{tag}-{b}-{r}")
        out.append(encoded_spans(list(exporter.get_finished_spans())))
        exporter.clear()
    return out


def agent_runs(n: int, tag: str) -> Iterator[tuple[str, bytes]]:
    """(trace id, request) for ``n`` runs, each run made just before it is yielded (its root span
    ends then)."""
    from tests.otel_toy_agent import encoded_spans, run_agent

    exporter, tp = _recorder()
    for i in range(n):
        tid = run_agent(tp, order=f"{tag}-{i}")
        yield tid, encoded_spans(list(exporter.get_finished_spans()))
        exporter.clear()


# -- the service's processes -----------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def service(args: list[str], idle: float, log: Path) -> Iterator[subprocess.Popen]:
    """An ``auditor`` process, stopped with SIGTERM (then killed) at the end."""
    env = {**os.environ, "AUDITOR_SPAN_IDLE_S": str(idle)}
    cmd = [sys.executable, "-m", "auditor.surfaces.cli.main", *args]
    with log.open("a") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=out)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait(check: Any, timeout: float, what: str, log: Path, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}; log: {log.read_text()[-3000:]}")


def audit_delays(store_url: str, sent: dict[str, float], log: Path) -> list[float]:
    """Seconds from each send to its trace's AuditCompleted (store clock), sorted."""
    from auditor.core.store import open_store

    store = open_store(store_url)
    delays: dict[str, float] = {}

    def all_audited() -> bool:
        for tid in sent.keys() - delays.keys():
            for ev in store.read_stream(f"audit-{tid}"):
                if ev.type == "AuditCompleted":
                    delays[tid] = datetime.fromisoformat(ev.recorded_at).timestamp() - sent[tid]
        return len(delays) == len(sent)

    try:
        _wait(all_audited, 180, f"the audits of {len(sent)} traces", log)
    finally:
        store.close()
    return sorted(delays.values())


# -- HTTP ------------------------------------------------------------------------------------------
@contextmanager
def server(store_url: str, idle: float, log: Path, threads: int | None) -> Iterator[tuple[str, str]]:
    """``auditor serve`` on a free port; (origin, ingest token)."""
    import httpx

    from auditor.core.store import open_store
    from auditor.surfaces.server.tokens import create_token

    store = open_store(store_url)
    token = create_token(store, f"bench-{uuid.uuid4().hex[:8]}", ["ingest"])[0]
    store.close()
    port = _free_port()
    extra = ["--threads", str(threads)] if threads else []
    args = ["--store", store_url, "serve", "--port", str(port), "--log-level", "warning", *extra]
    origin = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{origin}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    with service(args, idle, log):
        _wait(up, 180, "auditor serve", log, every=0.2)
        yield origin, token


def http_throughput(origin: str, token: str, clients: int, batches: int) -> tuple[int, float]:
    import httpx

    payloads = agent_batches(clients * batches, "T")
    headers = {"Content-Type": PROTO, "Authorization": f"Bearer {token}"}
    errors: list[str] = []

    def client(mine: list[bytes]) -> None:
        with httpx.Client(timeout=120) as http:
            for body in mine:
                r = http.post(f"{origin}/v1/traces", content=body, headers=headers)
                if r.status_code != 200:
                    errors.append(f"{r.status_code}: {r.text[:200]}")

    threads = [threading.Thread(target=client, args=(payloads[i::clients],)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise SystemExit(f"{len(errors)} requests failed, first: {errors[0]}")
    return len(payloads) * RUNS_PER_BATCH * 4, wall


def http_latency(origin: str, token: str, traces: int) -> dict[str, float]:
    import httpx

    headers = {"Content-Type": PROTO, "Authorization": f"Bearer {token}"}
    sent: dict[str, float] = {}
    with httpx.Client(timeout=60) as http:
        for tid, body in agent_runs(traces, "L"):
            r = http.post(f"{origin}/v1/traces", content=body, headers=headers)
            sent[f"otel-{tid}"] = time.time()
            if r.status_code != 200:
                raise SystemExit(f"export refused: {r.status_code} {r.text[:200]}")
            time.sleep(0.1)
    return sent


def run_http(args: argparse.Namespace, folder: Path) -> Figures:
    log = folder / "serve.log"
    url = args.store or f"sqlite:///{folder}/http.db"
    with server(url, 3600.0, log, args.threads) as (origin, token):
        load = os.getloadavg()[0]
        spans, wall = http_throughput(origin, token, args.clients, args.batches)
    # a store of its own: the throughput phase's traces would be completed (and audited) first
    url = f"{args.store}_latency" if args.store else f"sqlite:///{folder}/http-latency.db"
    with server(url, args.idle, log, args.threads) as (origin, token):
        sent = http_latency(origin, token, args.traces)
        delays = audit_delays(url, sent, log)
    return Figures("http", spans, wall, delays, load)


# -- Kafka -----------------------------------------------------------------------------------------
def _consume_args(store_url: str, bootstrap: str, t: dict[str, str]) -> list[str]:
    return [
        "--store", store_url, "stream", "consume", "--bootstrap", bootstrap, "--topic", t["steps"],
        "--group", f"g-{t['steps']}", "--dead-letter-topic", t["dlq"], "--closed-topic", t["closed"],
    ]  # fmt: skip


class Progress:
    """What the store holds, read cheaply while the consumer runs: its last position (one index
    probe: polling must not take the CPU it measures) and, when asked, the spans exactly."""

    def __init__(self, store_url: str) -> None:
        from auditor.core.store import open_store

        self.store = open_store(store_url)
        self.raw = self.store.engine.raw_connection()

    def _one(self, query: str) -> int:
        cur = self.raw.cursor()
        cur.execute(query)
        n = cur.fetchone()[0]
        self.raw.rollback()
        return int(n or 0)

    def position(self) -> int:
        return self._one("SELECT MAX(global_position) FROM events")

    def spans(self) -> int:
        return self._one("SELECT COUNT(*) FROM events WHERE type = 'SpanReceived'")

    def close(self) -> None:
        self.raw.close()
        self.store.close()


def kafka_throughput(store_url: str, bootstrap: str, records: int, log: Path) -> tuple[int, float]:
    from kafka import KafkaProducer

    from tests.stream_support import new_topics

    t = new_topics(bootstrap, 2, "steps", "dlq", "closed", prefix="otlp-bench")
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=4 << 20, linger_ms=20)
    for body in agent_batches(records, "K"):
        producer.send(t["steps"], value=body)
    producer.flush()
    producer.close()
    total = records * RUNS_PER_BATCH * 4
    progress = Progress(store_url)
    with service(_consume_args(store_url, bootstrap, t), 3600.0, log):
        _wait(progress.position, 180, "the consumer's first stored spans", log, every=0.01)
        started = time.perf_counter()
        first = progress.spans()
        # every span stored: the events are the spans and one SpanTracesOpened per transaction
        _wait(
            lambda: progress.position() >= total and progress.spans() == total, 600, "every span", log, 0.02
        )
        wall = time.perf_counter() - started
    progress.close()
    return total - first, wall


def kafka_latency(
    store_url: str, bootstrap: str, traces: int, idle: float, log: Path
) -> tuple[dict[str, float], list[float]]:
    from kafka import KafkaProducer

    from tests.stream_support import new_topics

    t = new_topics(bootstrap, 2, "steps", "dlq", "closed", "reports", "alerts", prefix="otlp-bench")
    workers = [
        "--store", store_url, "stream", "workers", "--bootstrap", bootstrap, "--closed-topic", t["closed"],
        "--group", f"w-{t['closed']}", "--reports-topic", t["reports"], "--alerts-topic", t["alerts"],
    ]  # fmt: skip
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=4 << 20)
    progress = Progress(store_url)
    sent: dict[str, float] = {}
    with service(_consume_args(store_url, bootstrap, t), idle, log), service(workers, idle, log):
        warm_tid, warm = next(agent_runs(1, "W"))  # both processes up and warm before measuring
        producer.send(t["steps"], key=warm_tid.encode(), value=warm).get(timeout=30)
        audit_delays(store_url, {f"otel-{warm_tid}": time.time()}, log)
        _wait(lambda: progress.spans() == 4, 60, "the warm-up trace", log)
        for tid, body in agent_runs(traces, "KL"):
            producer.send(t["steps"], key=tid.encode(), value=body).get(timeout=30)
            sent[f"otel-{tid}"] = time.time()
            time.sleep(0.1)
        delays = audit_delays(store_url, sent, log)
    producer.close()
    progress.close()
    return sent, delays


def run_kafka(args: argparse.Namespace, folder: Path) -> Figures:
    log = folder / "kafka.log"
    url = args.store or f"sqlite:///{folder}/kafka.db"
    load = os.getloadavg()[0]
    spans, wall = kafka_throughput(url, args.bootstrap, args.records, log)
    url = f"{args.store}_klatency" if args.store else f"sqlite:///{folder}/kafka-latency.db"
    _, delays = kafka_latency(url, args.bootstrap, args.traces, args.idle, log)
    return Figures("kafka", spans, wall, delays, load)


# -- the table -------------------------------------------------------------------------------------
def p95(values: list[float]) -> float:
    return values[min(len(values) - 1, round(0.95 * len(values)) - 1)]


def print_table(figures: list[Figures], args: argparse.Namespace) -> None:
    targets = {"http": 5000, "kafka": 10000}
    shape = {
        "http": f"protobuf, 100/req, {args.clients} clients",
        "kafka": "otlp_proto, 100/record",
    }
    print(f"{'measure':<52} {'value':>14} {'target':>12}")
    for f in figures:
        rate = f"{f.spans / f.wall:,.0f}"
        print(
            f"{f.mode + ' spans/s (' + shape[f.mode] + ')':<52} {rate:>14} {'>= ' + f'{targets[f.mode]:,}':>12}"
        )
        print(f"{'  spans, seconds':<52} {f'{f.spans:,} in {f.wall:.2f}':>14}")
        print(f"{'  load average (1 min) at its start, cores':<52} {f'{f.load:.1f}, {os.cpu_count()}':>14}")
        print(f"{f.mode + ' report delay after root end, p50 (s)':<52} {statistics.median(f.delays):>14.2f}")
        print(
            f"{f.mode + ' report delay after root end, p95 (s)':<52} {p95(f.delays):>14.2f} {f'<= {args.idle + 1:.1f}':>12}"
        )
        print(f"{'  idle time (s), traces':<52} {f'{args.idle}, {len(f.delays)}':>14}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("http", "kafka", "both"), default="both")
    ap.add_argument("--store", default=None, help="store URL (default: SQLite in a temporary folder)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--batches", type=int, default=10, help="requests of 100 spans per client")
    ap.add_argument("--threads", type=int, default=None, help="the server's request threads (its default)")
    ap.add_argument("--records", type=int, default=1000, help="Kafka records of 100 spans")
    ap.add_argument("--bootstrap", default=os.environ.get("AUDITOR_TEST_KAFKA", "127.0.0.1:19192"))
    ap.add_argument("--idle", type=float, default=2.0, help="idle time of the latency phases, seconds")
    ap.add_argument("--traces", type=int, default=20)
    args = ap.parse_args()
    figures = []
    with tempfile.TemporaryDirectory(prefix="otlp-bench-") as tmp:
        folder = Path(tmp)
        if args.mode in ("http", "both"):
            figures.append(run_http(args, folder))
        if args.mode in ("kafka", "both"):
            figures.append(run_kafka(args, folder))
    print_table(figures, args)


if __name__ == "__main__":
    main()
