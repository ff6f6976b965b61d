"""OTLP/HTTP ingestion on `auditor serve`: spans accepted per second, and the delay from a trace's
root span ending to its stored report.

Two phases against one in-process server (uvicorn, the real app, a SQLite store in a temporary
folder unless ``--store`` names one):

1. **throughput**: ``--clients`` threads each POST ``--batches`` protobuf ExportTraceServiceRequests
   of 100 spans (25 runs of the toy GenAI agent in tests/otel_toy_agent.py, encoded by the
   OpenTelemetry SDK's encoder beforehand) to /v1/traces; spans/s = spans accepted / wall time.
   The idle time is long here, so the phase measures acceptance (decode + one store transaction
   per request) and not the audits behind it.
2. **latency**: with ``--idle`` seconds of idle time, ``--traces`` agent runs are exported one by
   one (their root span ends just before its request); the delay is from the request's answer to
   the ``AuditCompleted`` event of its trace (store clock).

    python benchmarks/otlp_bench.py [--clients 20] [--batches 5] [--idle 2] [--traces 20]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROTO = "application/x-protobuf"


def serve(store_url: str, idle: float) -> tuple[object, object, str, str]:
    import uvicorn

    from auditor.server import ServerConfig, create_app
    from auditor.server.tokens import create_token
    from ingest.span_assembly import AssemblySettings

    app = create_app(ServerConfig(store_url=store_url, threads=8))
    app.state.span_settings = AssemblySettings(idle_s=idle, rootless_s=max(idle, 60.0), tick_s=0.05)
    token = create_token(app.state.store, f"bench-{time.time()}", ["ingest"])[0]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, app, f"http://127.0.0.1:{sock.getsockname()[1]}", token


def agent_batches(n: int, runs_per_batch: int) -> list[bytes]:
    """``n`` protobuf requests, each the spans of ``runs_per_batch`` toy-agent runs."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.otel_toy_agent import encoded_spans, provider, run_agent

    exporter = InMemorySpanExporter()
    tp = provider(SimpleSpanProcessor(exporter))
    out = []
    for b in range(n):
        for r in range(runs_per_batch):
            run_agent(tp, order=f"T-{b}-{r}")
        out.append(encoded_spans(list(exporter.get_finished_spans())))
        exporter.clear()
    return out


def throughput(origin: str, token: str, clients: int, batches: int) -> tuple[int, float]:
    import httpx

    payloads = agent_batches(clients * batches, 25)
    headers = {"Content-Type": PROTO, "Authorization": f"Bearer {token}"}
    errors: list[str] = []

    def client(mine: list[bytes]) -> None:
        with httpx.Client(timeout=60) as http:
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
    return clients * batches * 100, wall


def latency(origin: str, token: str, store: object, traces: int) -> list[float]:
    import httpx
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.otel_toy_agent import encoded_spans, provider, run_agent

    exporter = InMemorySpanExporter()
    tp = provider(SimpleSpanProcessor(exporter))
    headers = {"Content-Type": PROTO, "Authorization": f"Bearer {token}"}
    sent: dict[str, float] = {}
    with httpx.Client(timeout=60) as http:
        for i in range(traces):
            tid = run_agent(tp, order=f"L-{i}")
            r = http.post(
                f"{origin}/v1/traces",
                content=encoded_spans(list(exporter.get_finished_spans())),
                headers=headers,
            )
            sent[f"otel-{tid}"] = datetime.now(UTC).timestamp()
            exporter.clear()
            assert r.status_code == 200, r.text
            time.sleep(0.1)
    delays: dict[str, float] = {}
    deadline = time.monotonic() + 120
    while len(delays) < traces and time.monotonic() < deadline:
        for tid in sent.keys() - delays.keys():
            for ev in store.read_stream(f"audit-{tid}"):  # type: ignore[attr-defined]
                if ev.type == "AuditCompleted":
                    delays[tid] = datetime.fromisoformat(ev.recorded_at).timestamp() - sent[tid]
        time.sleep(0.1)
    if len(delays) < traces:
        raise SystemExit(f"only {len(delays)} of {traces} traces were audited within 120 s")
    return sorted(delays.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=None, help="store URL (default: SQLite in a temporary folder)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--batches", type=int, default=5, help="requests of 100 spans per client")
    ap.add_argument("--idle", type=float, default=2.0, help="idle time of the latency phase, seconds")
    ap.add_argument("--traces", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="otlp-bench-") as folder:
        url = args.store or f"sqlite:///{folder}/throughput.db"
        server, app, origin, token = serve(url, idle=3600.0)
        spans, wall = throughput(origin, token, args.clients, args.batches)
        server.should_exit = True  # type: ignore[attr-defined]
        time.sleep(1)
        # a store of its own: the throughput phase's traces would be completed (and audited) first
        url = f"{args.store}_latency" if args.store else f"sqlite:///{folder}/latency.db"
        server, app, origin, token = serve(url, idle=args.idle)
        delays = latency(origin, token, app.state.store, args.traces)  # type: ignore[attr-defined]
        server.should_exit = True  # type: ignore[attr-defined]
    p95 = delays[min(len(delays) - 1, round(0.95 * len(delays)) - 1)]
    print(f"spans accepted: {spans:,} in {wall:.1f} s")
    print(f"{'measure':<46} {'value':>12} {'target':>14}")
    print(
        f"{'spans accepted /s (protobuf, 100/req, ' + str(args.clients) + ' clients)':<46} {spans / wall:>12,.0f} {'>= 5,000':>14}"
    )
    print(f"{'  spans, seconds':<46} {f'{spans:,} in {wall:.1f}':>12}")
    print(f"{'report delay after root end, p50 (s)':<46} {statistics.median(delays):>12.2f}")
    print(f"{'report delay after root end, p95 (s)':<46} {p95:>12.2f} {f'<= {args.idle + 1:.1f}':>14}")
    print(f"{'  idle time (s), traces':<46} {f'{args.idle}, {len(delays)}':>12}")


if __name__ == "__main__":
    main()
