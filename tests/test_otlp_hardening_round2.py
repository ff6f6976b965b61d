"""OTLP intake, hardening round two (issue 31, items 3, 4, 5 and 6, and two leftovers of item 1).

Against a real `auditor serve --redact` in its own process over SQLite, fed by the OpenTelemetry
SDK's own encoder and exporter where a client would use them, and by hand-written OTLP JSON where
the SDK cannot write the hostile case:

- a time at or beyond 2^63 ns (10^30 in JSON, 2^64 - 1 by the SDK's protobuf) and an ``intValue``
  that is no integer refuse their span only, in ``partial_success``; the trace is assembled from
  the rest (before: acknowledged, then the completion failed or the whole trace was rejected);
- a trace id that a file ingest already stored, sent over OTLP with other content, is stored as a
  new revision (``otel-…-r2``, ``revises`` naming the stored one), and later revisions follow
  (before: stuck "completed", no rejection, later revisions blocked);
- a gzip body of several members is read whole; bytes after the last member refuse the request;
- a span id sent again with other content is refused in ``partial_success`` (the first content
  kept), a retry of the same content is not; a key repeated in a JSON object refuses the request;
- no answer quotes what the request held: a secret in an unknown field's name, a span's name, a
  time's value or a header never comes back.

The span importers refuse the same times in a file with its line (the end time raised an
``OverflowError``: a traceback). ``auditor store verify`` passes after each case.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

import httpx

from auditor.core.store import EventStore, open_store
from auditor.core.store.traces import load_trace
from auditor.surfaces.server.tokens import create_token
from ingest.span_assembly import ASSEMBLED, RECEIVED, REJECTED, spans_stream
from tests.otel_toy_agent import encoded_spans, json_body, provider, run_agent
from tests.serve_support import flush, serving
from tests.test_otlp_isolation import _verify
from tests.test_otlp_kill import REPO

pytestmark = pytest.mark.slow
PROTO, JSON = "application/x-protobuf", "application/json"
SECRET = "sk-proj-Zq81bT0pLx4vR2mW9sYc3NdKe7Hf"  # the shape of an API key, planted in requests


class Server:
    """A running `auditor serve --redact` and its store."""

    def __init__(self, origin: str, token: str, store: EventStore) -> None:
        self.origin, self.token, self.store = origin, token, store

    def post(self, body: bytes | str, media: str = JSON, **headers: str) -> httpx.Response:
        auth = {"Content-Type": media, "Authorization": f"Bearer {self.token}", **headers}
        return httpx.post(f"{self.origin}/v1/traces", content=body, headers=auth, timeout=60)

    def flush(self, tid: str) -> list[dict]:
        return flush(self.origin, self.token, tid)

    def spans(self, tid: str) -> list[dict]:
        return [e.payload["span"] for e in self.store.read_stream(spans_stream(tid)) if e.type == RECEIVED]

    def types(self, tid: str) -> list[str]:
        return [e.type for e in self.store.read_stream(spans_stream(tid))]

    def verify(self) -> None:
        _verify(self.store)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve")
    url = f"sqlite:///{folder / 'auditor.db'}"
    store = open_store(url)
    token = create_token(store, "agent", ["ingest"])[0]
    with serving(url, folder, "--redact") as origin:
        yield Server(origin, token, store)
    store.close()


def said(text: str) -> list[dict]:
    """The attributes of a GenAI chat span whose model said ``text``."""
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
    return [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": out}},
    ]


def span(tid: str, n: int, text: str, parent: int | None = None, **fields: object) -> dict:
    out = {
        "traceId": tid,
        "spanId": f"{n:016x}",
        "name": f"chat {n}",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
        "endTimeUnixNano": str(1_700_000_001_000_000_000 + n),
        "attributes": said(text),
        **fields,
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def body(*spans: dict) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]})


def partial(r: httpx.Response) -> tuple[int, str]:
    """(rejected spans, error message) of a 200 ExportTraceServiceResponse in either encoding."""
    assert r.status_code == 200, r.text
    if r.headers["content-type"].startswith(PROTO):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        p = ExportTraceServiceResponse.FromString(r.content).partial_success
        return p.rejected_spans, p.error_message
    p = r.json().get("partialSuccess", {})
    return int(p.get("rejectedSpans", 0)), p.get("errorMessage", "")


def sdk_spans(order: str) -> tuple[str, list]:
    """The toy agent's trace id and spans, as the SDK ended them."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    tid = run_agent(provider(SimpleSpanProcessor(memory)), order=order)
    return tid, list(memory.get_finished_spans())


def late_root_spans(end_ns: int) -> tuple[str, list]:
    """An SDK trace: a chat span under a root span that ``span.end(end_time=end_ns)`` ended."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    tracer = provider(SimpleSpanProcessor(memory)).get_tracer("late")
    root = tracer.start_span("invoke_agent late")
    with trace.use_span(root), tracer.start_as_current_span("chat") as chat:
        chat.set_attribute("gen_ai.operation.name", "chat")
        chat.set_attribute("gen_ai.output.messages", said("On time.")[1]["value"]["stringValue"])
    root.end(end_time=end_ns)
    return format(root.get_span_context().trace_id, "032x"), list(memory.get_finished_spans())


# -- item 3 and the intValue leftover: one span refused, the trace assembled from the rest ----------
def test_a_time_beyond_2_63_ns_refuses_its_span_and_the_trace_still_assembles(server: Server) -> None:
    tid = "3" * 32
    late = span(tid, 1, "root", endTimeUnixNano=str(10**30))
    r = server.post(body(late, span(tid, 2, "The answer arrived.", parent=1)))
    assert partial(r) == (
        1,
        "resourceSpans.0.scopeSpans.0.spans.0: 'endTimeUnixNano': a time must be below 2^63 "
        "nanoseconds (the year 2262)",
    )
    assert [s["spanId"] for s in server.spans(tid)] == [f"{2:016x}"]
    [done] = server.flush(tid)
    assert [s.content for s in load_trace(server.store, done["trace_id"]).steps] == ["The answer arrived."]

    sdk_tid, sdk = late_root_spans(2**64 - 1)  # what protobuf's fixed64 can still carry
    assert partial(server.post(encoded_spans(sdk), PROTO)) == (
        1,
        "resourceSpans.0.scopeSpans.0.spans.1: a time must be below 2^63 nanoseconds (the year 2262)",
    )
    assert [s["name"] for s in server.spans(sdk_tid)] == ["chat"]
    [done] = server.flush(sdk_tid)
    assert [s.content for s in load_trace(server.store, done["trace_id"]).steps] == ["On time."]
    server.verify()


def test_an_int_value_that_is_no_integer_refuses_its_span_not_the_trace(server: Server) -> None:
    tid = "4" * 32
    odd = span(
        tid, 1, "odd", attributes=[{"key": "n", "value": {"arrayValue": {"values": [{"intValue": "12ab"}]}}}]
    )
    r = server.post(body(odd, span(tid, 2, "The count is fine.")))
    assert partial(r) == (
        1,
        "resourceSpans.0.scopeSpans.0.spans.0: 'attributes' holds an intValue that is not a 64-bit integer",
    )
    [done] = server.flush(tid)
    assert [s.content for s in load_trace(server.store, done["trace_id"]).steps] == ["The count is fine."]
    assert REJECTED not in server.types(tid)
    server.verify()


# -- item 4: a trace id a file ingest stored, sent over OTLP with other content ---------------------
def test_a_trace_id_stored_from_a_file_is_sent_again_as_a_new_revision(
    server: Server, tmp_path: Path
) -> None:
    tid = "5" * 32
    file = tmp_path / "export.json"
    file.write_text(body(span(tid, 1, "From the file.")))
    ingest = subprocess.run(
        [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", server.store.url, "ingest", str(file)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ingest.returncode == 0, ingest.stderr
    base = f"otel-{tid}"

    assert partial(server.post(body(span(tid, 1, "Over the wire.")))) == (0, "")
    [first] = server.flush(tid)
    assert first["trace_id"] == f"{base}-r2" and first["revision"] == 1
    stored = load_trace(server.store, first["trace_id"])
    assert stored.header.metadata["revises"] == base and stored.header.metadata["span_revision"] == 1
    assert [s.content for s in load_trace(server.store, base).steps] == ["From the file."]  # untouched

    assert partial(server.post(body(span(tid, 2, "A late span.")))) == (0, "")  # the next revision follows
    [second] = server.flush(tid)
    assert second["trace_id"] == f"{base}-r3" and second["revision"] == 2
    assert load_trace(server.store, second["trace_id"]).header.metadata["revises"] == f"{base}-r2"
    assert server.types(tid).count(ASSEMBLED) == 2 and REJECTED not in server.types(tid)
    server.verify()


# -- item 5: gzip members -------------------------------------------------------------------------
def test_every_member_of_a_gzip_body_is_read_and_trailing_bytes_refuse_it(server: Server) -> None:
    one_tid, one = sdk_spans("G-1")
    two_tid, two = sdk_spans("G-2")
    members = gzip.compress(encoded_spans(one)) + gzip.compress(encoded_spans(two))
    assert partial(server.post(members, PROTO, **{"Content-Encoding": "gzip"})) == (0, "")
    assert len(server.spans(one_tid)) == len(one) and len(server.spans(two_tid)) == len(two)

    three_tid, three = sdk_spans("G-3")
    for tail in (b"garbage", b"\0" * 8):
        r = server.post(gzip.compress(encoded_spans(three)) + tail, PROTO, **{"Content-Encoding": "gzip"})
        assert r.status_code == 400, r.text
        from google.rpc.status_pb2 import Status

        assert f"{len(tail)} bytes after its end" in Status.FromString(r.content).message
    assert server.spans(three_tid) == []
    server.verify()


# -- item 6: a span id again, with other content; repeated keys --------------------------------------
def test_a_span_id_sent_again_with_other_content_is_refused_in_partial_success(server: Server) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    tracer = provider(SimpleSpanProcessor(memory)).get_tracer("repeat")
    with tracer.start_as_current_span("chat") as root:  # redacted when stored: a placeholder
        root.set_attribute("gen_ai.operation.name", "chat")
        root.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Mail ana.ruiz@example.org."}]}]))  # fmt: skip
        tid = format(root.get_span_context().trace_id, "032x")
    spans = list(memory.get_finished_spans())
    exporter = OTLPSpanExporter(
        endpoint=f"{server.origin}/v1/traces", headers={"Authorization": f"Bearer {server.token}"}
    )
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    [first] = server.spans(tid)
    assert "[REDACTED_EMAIL_1]" in json.dumps(first)
    assert partial(server.post(encoded_spans(spans), PROTO)) == (0, "")  # a retry: nothing to report
    assert partial(server.post(json_body(spans))) == (0, "")  # the same, in the other encoding

    changed = {**first, "attributes": said("Something else.")}
    assert partial(server.post(body(changed))) == (
        1,
        f"span {first['spanId']} of trace {tid} was already received with other content; the first is kept",
    )
    [done] = server.flush(tid)  # the trace's redaction numbering starts again after its completion
    assert partial(server.post(encoded_spans(spans), PROTO)) == (0, "")
    assert partial(server.post(body(changed)))[0] == 1
    assert server.spans(tid) == [first]  # the first content stays, nothing was added
    assert [s.content for s in load_trace(server.store, done["trace_id"]).steps] == [
        "Mail [REDACTED_EMAIL_1]."
    ]

    twin = span("6" * 32, 1, "One.")
    rejected, why = partial(server.post(body(twin, {**twin, "attributes": said("Two.")})))
    assert rejected == 1 and "already received with other content" in why
    assert [s["attributes"] for s in server.spans("6" * 32)] == [said("One.")]
    server.verify()


def test_a_key_repeated_in_a_json_object_refuses_the_request(server: Server) -> None:
    tid = "7" * 32
    text = body(span(tid, 1, "Twice named.")).replace(
        '"name": "chat 1"', '"name": "chat 1", "name": "chat 2"'
    )
    r = server.post(text)
    assert r.status_code == 400 and r.json()["code"] == 3
    assert (
        "field 'resourceSpans.0.scopeSpans.0.spans.0.name': a key appears more than once"
        in r.json()["message"]
    )
    assert server.spans(tid) == []
    server.verify()


# -- leftover of item 1: no answer quotes the request ------------------------------------------------
def test_no_answer_echoes_a_secret_from_the_request(server: Server) -> None:
    tid = "8" * 32
    answers = [
        server.post(body(span(tid, 1, "x", **{SECRET: {"deep": float("nan")}}))),  # unknown field, refused
        server.post(body(span(tid, 1, "x", **{SECRET: [float("inf")]}))),
        server.post(body(span(tid, 1, "x")).replace('"name"', f'"{SECRET}": 1, "{SECRET}"')),  # repeated
        server.post(body(span(tid, 0, "x", name=SECRET))),  # a span id of zeros: refused, by its place
        server.post(body(span(tid, 2, "x", name=SECRET, endTimeUnixNano=SECRET))),
        server.post(body(span(tid, 3, "x", startTimeUnixNano=f"1{SECRET}"))),
        server.post("{}", f"text/{SECRET}"),
        server.post(b"{}", JSON, **{"Content-Encoding": SECRET}),
    ]
    for r in answers:
        assert r.status_code in (200, 400, 415), r.text
        assert SECRET not in r.text and SECRET.encode() not in r.content, r.text
    assert [r.status_code for r in answers[:3]] == [400, 400, 400]
    assert "(unknown field)" in answers[0].json()["message"]
    assert all(partial(r)[0] == 1 for r in answers[3:6])
    server.verify()


def test_the_same_times_in_a_file_are_refused_with_their_line_not_a_traceback(tmp_path: Path) -> None:
    from tests.cli_helpers import run

    for n, late in enumerate(({"endTimeUnixNano": str(10**30)}, {"startTimeUnixNano": str(2**63)})):
        file = tmp_path / f"export-{n}.json"
        file.write_text(body(span("9" * 32, 1, "Too late.", **late)))
        proc = run(["ingest", str(file)], tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"error: {file}, line 1, byte " in proc.stderr and "out of range" in proc.stderr


@pytest.mark.parametrize("redact", [False, True], ids=["plain", "redacted"])
def test_repeated_span_ids_and_a_held_trace_id_on_each_store(
    store: EventStore, tmp_path: Path, redact: bool
) -> None:
    """The same rules in the assembly itself, on SQLite and PostgreSQL (a jsonb payload compares
    as the stored text does), with and without redaction."""
    from ingest import ingest_path
    from ingest.otlp_request import decode_json
    from ingest.span_assembly import AssemblySettings, Received, SpanAssembly
    from ingest.span_redact import SpanRedaction

    tid = ("b" if redact else "c") * 32
    file = tmp_path / "export.json"
    file.write_text(body(span(tid, 1, "From the file.")))
    ingest_path(store, file)
    settings = AssemblySettings(idle_s=0.1, rootless_s=30.0)
    assembly = SpanAssembly(store, settings, "otlp-http", lambda _: None, SpanRedaction() if redact else None)

    first = decode_json(body(span(tid, 1, "Mail ana.ruiz@example.org."))).spans
    other = decode_json(body(span(tid, 1, "Something else."))).spans
    refused = f"span {1:016x} of trace {tid} was already received with other content; the first is kept"
    assert assembly.receive(first) == Received(1, 0)
    assert assembly.receive(first) == Received(0, 1)
    assert assembly.receive(other) == Received(0, 0, (refused,))
    assert assembly.receive([*first, *other]) == Received(0, 1, (refused,))
    [done] = assembly.flush(tid)
    assert done.trace_id == f"otel-{tid}-r2"
    assert assembly.receive(first) == Received(0, 1)  # after the completion, redacted numbering anew
    assert assembly.receive(other) == Received(0, 0, (refused,))
    said_ = load_trace(store, done.trace_id).steps[0].content
    assert said_ == ("Mail [REDACTED_EMAIL_1]." if redact else "Mail ana.ruiz@example.org.")
