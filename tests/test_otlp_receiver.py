"""OTLP/HTTP on a running `auditor serve`: the OpenTelemetry Python SDK's own OTLP exporter sends
the spans of an instrumented toy agent (protobuf, plain and gzip; JSON bodies built by the SDK's
encoder), configured only by the standard OTEL_EXPORTER_OTLP_* variables; each trace is audited
with no file in between, its report is in the store and validates. The OTLP status codes and
response bodies for bad input, and partial success. A real span example of each convention (GenAI,
OpenInference) sent through /v1/traces imports as the file importer reads it; a redacting server
stores spans redacted."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

import httpx

from auditor.audit.audit_runs import finished as audited
from auditor.audit.report.validator import validate_report
from auditor.core.store import EventStore, open_store
from auditor.core.store.reports import list_reports
from auditor.core.store.traces import load_trace
from auditor.surfaces.server import ServerConfig, create_app
from auditor.surfaces.server.routes_otlp import MAX_OTLP_BYTES
from auditor.surfaces.server.tokens import create_token
from ingest.span_assembly import AssemblySettings
from tests.otel_toy_agent import encoded_spans, json_body, provider, run_agent
from tests.stream_support import wait_until

IDLE = 0.5


class Server:
    def __init__(self, store: EventStore, origin: str, tokens: dict[str, str]) -> None:
        self.store, self.origin, self.tokens = store, origin, tokens

    def headers(self, media: str, token: str = "ingest") -> dict[str, str]:
        return {"Content-Type": media, "Authorization": f"Bearer {self.tokens[token]}"}


@contextmanager
def serving(folder: Path, config: ServerConfig) -> Iterator[Server]:
    """`auditor serve`'s app on a free port, in a thread, over a SQLite store in ``folder``."""
    import uvicorn

    store = open_store(f"sqlite:///{folder / 'auditor.db'}")
    tokens = {
        "ingest": create_token(store, "agent", ["ingest"])[0],
        "read": create_token(store, "reader", ["read"])[0],
    }
    app = create_app(config, store=store)
    app.state.span_settings = AssemblySettings(idle_s=IDLE, rootless_s=60.0, tick_s=0.05)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield Server(store, f"http://127.0.0.1:{sock.getsockname()[1]}", tokens)
    srv.should_exit = True
    thread.join(10)
    store.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("otlp"), ServerConfig()) as s:
        yield s


def audited_trace(server: Server, trace_id: str) -> None:
    """Wait for the trace's audit; its report is in the store and validates against the trace."""
    wait_until(lambda: audited(server.store, trace_id), 20, f"the audit of {trace_id}")
    [report] = list_reports(server.store, trace_id)
    trace = load_trace(server.store, trace_id)
    assert validate_report(report.model_dump(mode="json"), trace).ok
    assert [s.actor for s in trace.steps] == [
        "user",
        "refund_agent",
        "lookup_order",
        "refund_agent",
        "refund_agent",
    ]


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_the_sdk_exporter_configured_by_environment_gets_its_trace_audited(
    server: Server, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.origin)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{server.tokens['ingest']}")
    exporter = OTLPSpanExporter(compression=Compression.Gzip if compression == "gzip" else None)
    tp = provider(SimpleSpanProcessor(exporter))  # one request per span, as each ends: they arrive over time
    tid = run_agent(tp, order=f"B-{compression}")
    tp.shutdown()
    audited_trace(server, f"otel-{tid}")


def test_json_bodies_and_an_explicit_flush(server: Server) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(exporter)), order="C-json")
    spans = list(exporter.get_finished_spans())
    h = server.headers("application/json")
    for batch in (spans[:2], spans[2:]):
        r = httpx.post(f"{server.origin}/v1/traces", content=json_body(batch), headers=h)
        assert (r.status_code, r.json(), r.headers["content-type"]) == (200, {}, "application/json")
    r = httpx.post(f"{server.origin}/api/otlp/flush", params={"trace_id": tid}, headers=h, timeout=30)
    assert r.status_code == 200, r.text
    [done] = r.json()["assembled"]
    assert (done["trace_id"], done["reason"], done["steps"]) == (f"otel-{tid}", "flush", 5)
    audited_trace(server, f"otel-{tid}")


def test_status_codes_and_bodies(server: Server) -> None:
    from google.rpc.status_pb2 import Status
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    url = f"{server.origin}/v1/traces"
    proto = "application/x-protobuf"
    r = httpx.post(url, content=b"{}", headers={"Content-Type": "application/json"})
    assert r.status_code == 401 and r.json()["code"] == 16 and "bearer token" in r.json()["message"]
    r = httpx.post(url, content=b"", headers=server.headers(proto, token="read"))
    assert r.status_code == 403 and Status.FromString(r.content).code == 7
    r = httpx.post(url, content=b"x", headers=server.headers("text/plain"))
    assert r.status_code == 415 and "is not OTLP" in r.json()["message"]
    r = httpx.post(url, content=b"\xff\xff\xff", headers=server.headers(proto))
    assert r.status_code == 400 and "ExportTraceServiceRequest" in Status.FromString(r.content).message
    r = httpx.post(url, content=b'{"resourceSpans": 3}', headers=server.headers("application/json"))
    assert r.status_code == 400 and "'resourceSpans' must be a JSON array" in r.json()["message"]
    r = httpx.post(url, content=b"not gzip", headers={**server.headers(proto), "Content-Encoding": "gzip"})
    assert r.status_code == 400 and "gzip" in Status.FromString(r.content).message
    r = httpx.post(url, content=b"x", headers={**server.headers(proto), "Content-Encoding": "br"})
    assert r.status_code == 415
    bomb = gzip.compress(b"\0" * (MAX_OTLP_BYTES + 1))  # small on the wire, too large inflated
    r = httpx.post(url, content=bomb, headers={**server.headers(proto), "Content-Encoding": "gzip"})
    assert r.status_code == 413 and "decompressed" in Status.FromString(r.content).message
    r = httpx.post(url, content=b"\0" * (MAX_OTLP_BYTES + 1), headers=server.headers(proto))
    assert r.status_code == 413

    exporter = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(exporter)), order="D-partial")
    spans = list(exporter.get_finished_spans())
    data = json.loads(json_body(spans))
    data["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "not-an-id"
    r = httpx.post(url, content=json.dumps(data), headers=server.headers("application/json"))
    assert r.status_code == 200
    partial = r.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "'spanId' must be 16 hex digits" in partial["errorMessage"]
    r = httpx.post(url, content=encoded_spans(spans), headers=server.headers(proto))  # all four, by protobuf
    assert (
        r.status_code == 200
        and ExportTraceServiceResponse.FromString(r.content).partial_success.rejected_spans == 0
    )
    audited_trace(server, f"otel-{tid}")


REAL = Path(__file__).resolve().parent / "fixtures" / "real" / "openinference-genai"
CONVENTIONS = {  # a real span example of each convention, from Arize-ai/openinference (SOURCES.md)
    "genai": REAL / "otel_genai_client_span_tool_calls.json",
    "openinference": REAL / "openinference_client_span_tool_calls.json",
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_a_conventions_span_example_sent_to_v1_traces_imports_as_the_file_importer_reads_it(
    server: Server, convention: str
) -> None:
    """The example's attributes on one span of an SDK-instrumented service, exported by the SDK's
    OTLP exporter: the stored trace has the steps that importing the example file gives. What the
    file cannot say stays apart: the span's time, ids and name, and the service (its framework)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from ingest import open_traces

    path = CONVENTIONS[convention]
    exporter = OTLPSpanExporter(
        endpoint=f"{server.origin}/v1/traces",
        headers={"Authorization": f"Bearer {server.tokens['ingest']}"},
    )
    tp = provider(SimpleSpanProcessor(exporter), service=f"{convention}-service")
    with tp.get_tracer("conformance").start_as_current_span("chat") as span:
        span.set_attributes(json.loads(path.read_text(encoding="utf-8")))
        tid = format(span.get_span_context().trace_id, "032x")
    tp.shutdown()
    r = httpx.post(
        f"{server.origin}/api/otlp/flush",
        params={"trace_id": tid},
        headers=server.headers("application/json"),
        timeout=60,
    )
    assert r.status_code == 200, r.text
    [done] = r.json()["assembled"]
    received = load_trace(server.store, done["trace_id"])
    [from_file] = list(open_traces(path, "auto"))

    def essence(step: dict) -> dict:
        raw = {k: v for k, v in (step.get("raw") or {}).items() if k not in ("span_id", "span_name")}
        return {**{k: v for k, v in step.items() if k not in ("timestamp", "raw")}, "raw": raw}

    expected = [essence(s.model_dump(mode="json")) for s in from_file.steps()]
    assert len(expected) == 5
    assert [essence(s.model_dump(mode="json")) for s in received.steps] == expected
    assert received.header.framework == f"{convention}-service"
    assert all(s.timestamp is not None for s in received.steps)


def test_a_redacting_server_stores_redacted_spans(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    email = "dana.ruiz@northwind.example"
    exporter = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(exporter)), order=email)
    with serving(tmp_path, ServerConfig(redact=True)) as server:
        body = encoded_spans(list(exporter.get_finished_spans()))
        r = httpx.post(
            f"{server.origin}/v1/traces", content=body, headers=server.headers("application/x-protobuf")
        )
        assert r.status_code == 200
        wait_until(lambda: audited(server.store, f"otel-{tid}"), 20, "the audit")
        stored = json.dumps([e.payload for e in server.store.read_all()], ensure_ascii=False)
        steps = load_trace(server.store, f"otel-{tid}").steps
    assert email not in stored
    assert steps[0].content == "Please refund order [REDACTED_EMAIL_1], it arrived broken."
