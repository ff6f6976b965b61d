"""kill -9 mid-trace loses no span: the real `auditor serve` and `auditor stream consume` processes,
killed with SIGKILL while traces are open, then restarted over the same store. Every span that was
acknowledged (a 200 to the exporter, a committed Kafka offset) is in the store at the moment of the
kill; after the restart every trace completes with every one of its spans, each stored once, and
is imported (and audited, on the server) as a whole."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

import httpx

from auditor.audit.audit_runs import finished as audited
from auditor.core.store import EventStore, open_store
from auditor.core.store.traces import load_trace
from ingest.span_assembly import ASSEMBLED, RECEIVED, spans_stream
from tests.otel_toy_agent import encoded_spans, provider, run_agent
from tests.stream_support import count_type, wait_until

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


def agent_runs(n: int, tag: str) -> list[tuple[str, list]]:
    """(trace id, SDK spans in the order they ended: the root last) for ``n`` toy-agent runs."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tp = provider(SimpleSpanProcessor(exporter))
    runs = []
    for i in range(n):
        tid = run_agent(tp, order=f"{tag}-{i}")
        runs.append((tid, list(exporter.get_finished_spans())))
        exporter.clear()
    return runs


@contextmanager
def process(args: list[str], log: Path, idle: float) -> Iterator[subprocess.Popen]:
    """An `auditor` process; the caller may kill it; otherwise it is stopped at the end."""
    env = {**os.environ, "AUDITOR_SPAN_IDLE_S": str(idle)}
    with log.open("a") as out:  # a file, not a pipe nobody reads: a full pipe blocks the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "auditor.surfaces.cli.main", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        yield proc
    except BaseException:
        print(f"--- {log.name}\n{log.read_text()[-5000:]}")
        raise
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def kill_9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def assert_whole(store: EventStore, tid: str) -> None:
    """Every span of the trace stored once, and the trace imported from all of them."""
    kinds = [e.type for e in store.read_stream(spans_stream(tid))]
    assert kinds.count(RECEIVED) == 4 and kinds.count(ASSEMBLED) == 1, kinds
    assert len(load_trace(store, f"otel-{tid}").steps) == 5


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'auditor.db'}"


def test_kill_9_of_the_server_mid_trace_loses_no_span(store_url: str, tmp_path: Path) -> None:
    from auditor.surfaces.server.tokens import create_token

    store = open_store(store_url)
    headers = {
        "Content-Type": "application/x-protobuf",
        "Authorization": f"Bearer {create_token(store, 'agent', ['ingest'])[0]}",
    }
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    origin = f"http://127.0.0.1:{port}"
    args = ["--store", store_url, "serve", "--port", str(port), "--log-level", "warning"]
    log = tmp_path / "serve.log"

    def up() -> bool:
        try:
            return httpx.get(f"{origin}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def export(spans: list) -> None:
        r = httpx.post(f"{origin}/v1/traces", content=encoded_spans(spans), headers=headers, timeout=60)
        assert r.status_code == 200, r.text

    runs = agent_runs(6, "S")
    whole, halves = runs[:3], runs[3:]  # whole: every span before the kill, completion pending
    with process(args, log, idle=3.0) as server:
        wait_until(up, 180, "auditor serve", every=0.2)
        for _, spans in whole:
            export(spans)
        for _, spans in halves:
            export(spans[:2])  # the root ends last: these traces are still open
        kill_9(server)
    assert count_type(store, RECEIVED) == 3 * 4 + 3 * 2  # every acknowledged span is stored
    assert count_type(store, ASSEMBLED) == 0  # killed before any trace was complete

    with process(args, log, idle=3.0):
        wait_until(up, 180, "auditor serve after the kill", every=0.2)
        for _, spans in halves:
            export(spans[2:])
        for tid, _ in runs:  # the whole traces complete from recovery alone: no span arrives for them
            wait_until(lambda tid=tid: audited(store, f"otel-{tid}"), 120, f"the audit of {tid}")
    for tid, _ in runs:
        assert_whole(store, tid)
    store.close()


@pytest.mark.kafka
def test_kill_9_of_the_consumer_mid_trace_loses_no_span(store_url: str, tmp_path: Path) -> None:
    from kafka import KafkaProducer

    from tests.stream_support import kafka_bootstrap, new_topics

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 2, "steps", "dlq", "closed")
    runs = agent_runs(60, "C")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for tid, spans in runs:  # otlp_proto keyed by trace id; each trace in two records, the root last
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[:3]))
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[3:]))
    producer.flush()
    producer.close()
    store = open_store(store_url)
    args = [
        "--store", store_url, "stream", "consume", "--bootstrap", bootstrap, "--topic", t["steps"],
        "--group", f"g-{t['steps']}", "--dead-letter-topic", t["dlq"], "--closed-topic", t["closed"],
        "--instance-id", "consumer-0", "--max-batch", "3",
    ]  # fmt: skip
    log = tmp_path / "consume.log"
    total = len(runs) * 4
    with process(args, log, idle=1.0) as consumer:
        seen = wait_until(lambda: count_type(store, RECEIVED), 180, "the first stored spans", every=0.02)
        kill_9(consumer)
    at_kill = count_type(store, RECEIVED)
    assert 0 < seen <= at_kill < total, "the kill must land in the middle of consumption"

    with process(args, log, idle=1.0):
        wait_until(lambda: count_type(store, ASSEMBLED) == len(runs), 180, "every trace assembled")
    assert count_type(store, RECEIVED) == total  # re-delivered records stored nothing twice
    for tid, _ in runs:
        assert_whole(store, tid)
    store.close()
