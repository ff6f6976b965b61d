"""One client's bad OTLP request never costs another client its spans (issue 31, item 1).

A real `auditor serve` in its own process takes exports from several clients at once: clean ones,
and ones whose JSON bodies hold a NaN, an Infinity or a ``1e400`` double, a non-finite number where
no double may be, or a kvlist nested 63 or 10,000 levels deep. Concurrent requests share one group
commit, so before the fix a bad request failed the clean ones beside it (500, spans lost: OTLP
exporters do not retry a 500). Now every clean request is answered 200 with its spans stored; a
non-finite double is kept as proto3's JSON string (``"NaN"``); the rest get their own 400
``google.rpc.Status`` naming the field; the OpenTelemetry SDK's exporter sending
``set_attribute("s", float("nan"))`` gets its trace stored and assembled; ``store verify`` passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

import httpx

from auditor.core.store import EventStore, open_store
from auditor.core.store.traces import load_trace
from auditor.surfaces.server.tokens import create_token
from ingest.span_assembly import RECEIVED, spans_stream
from tests.otel_toy_agent import provider
from tests.serve_support import flush, serving
from tests.test_otlp_kill import REPO

pytestmark = pytest.mark.slow
CLEAN_CLIENTS, BAD_CLIENTS, ROUNDS, SPANS = 6, 4, 12, 5


def _span(tid: str, n: int, attributes: list[dict], **extra: object) -> dict:
    return {
        "traceId": tid,
        "spanId": f"{n + 1:016x}",
        "name": f"chat step {n}",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": attributes,
        **extra,
    }


def _body(spans: list[dict]) -> str:
    """An OTLP JSON request; ``json.dumps`` writes a non-finite float as the bare word (NaN)."""
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})


def clean(tid: str) -> str:
    text = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]
    return _body([_span(tid, n, text) for n in range(SPANS)])


def _kvlist(levels: int) -> dict:
    value: dict = {"stringValue": "bottom"}
    for _ in range(levels):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def _deep_text(tid: str, levels: int) -> str:
    """A body nested ``levels`` kvlists deep, written without recursion (json.dumps would fail)."""
    marker = '"@DEEP@"'
    body = _body([_span(tid, 0, [{"key": "deep", "value": "@DEEP@"}])])
    inner = '{"kvlistValue": {"values": [{"key": "k", "value": ' * levels
    return body.replace(marker, inner + '{"stringValue": "x"}' + "}]}}" * levels)


# name -> (body for a trace id, expected status, what the answer must say or the stored double)
BAD: dict[str, tuple[Callable[[str], str], int, str]] = {
    "nan-double": (
        lambda t: _body([_span(t, 0, [{"key": "s", "value": {"doubleValue": float("nan")}}])]),
        200,
        "NaN",
    ),
    "1e400-double": (
        lambda t: _body([_span(t, 0, [{"key": "s", "value": {"doubleValue": 0.5}}])]).replace("0.5", "1e400"),
        200,
        "Infinity",
    ),
    "nan-elsewhere": (
        lambda t: _body([_span(t, 0, [], droppedAttributesCount=float("-inf"))]),
        400,
        "field 'resourceSpans.0.scopeSpans.0.spans.0.droppedAttributesCount': the number -inf is not JSON",
    ),
    "kvlist-63": (lambda t: _deep_text(t, 63), 400, "nested deeper than 200 levels"),
    "kvlist-10000": (lambda t: _deep_text(t, 10_000), 400, "nested deeper than 200 levels"),
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, EventStore]]:
    """(origin, ingest token, store) of a running `auditor serve` process over SQLite."""
    url = f"sqlite:///{tmp_path / 'auditor.db'}"
    store = open_store(url)
    token = create_token(store, "agent", ["ingest"])[0]
    with serving(url, tmp_path) as origin:
        yield origin, token, store
    store.close()


def _stored_spans(store: EventStore, tid: str) -> list[dict]:
    return [e.payload["span"] for e in store.read_stream(spans_stream(tid)) if e.type == RECEIVED]


def test_bad_requests_among_concurrent_clients_fail_alone(served: tuple[str, str, EventStore]) -> None:
    origin, token, store = served
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    start = threading.Barrier(CLEAN_CLIENTS + BAD_CLIENTS)
    clean_answers: dict[str, int] = {}
    bad_answers: list[tuple[str, str, int, str]] = []
    lock = threading.Lock()

    def client(c: int, bad: bool) -> None:
        with httpx.Client(timeout=120) as http:
            start.wait()
            for r in range(ROUNDS):
                tid = f"{c:02x}{r:02x}".ljust(32, "a" if bad else "c")
                name = list(BAD)[(c + r) % len(BAD)] if bad else ""
                body = BAD[name][0](tid) if bad else clean(tid)
                answer = http.post(f"{origin}/v1/traces", content=body, headers=headers)
                with lock:
                    if bad:
                        bad_answers.append((name, tid, answer.status_code, answer.text))
                    else:
                        clean_answers[tid] = answer.status_code

    threads = [
        threading.Thread(target=client, args=(c, c >= CLEAN_CLIENTS))
        for c in range(CLEAN_CLIENTS + BAD_CLIENTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)

    assert len(clean_answers) == CLEAN_CLIENTS * ROUNDS
    assert set(clean_answers.values()) == {200}, sorted(clean_answers.values())
    for tid in clean_answers:  # every acknowledged clean span is stored
        assert len(_stored_spans(store, tid)) == SPANS, tid
    assert {name for name, *_ in bad_answers} == set(BAD)  # every kind of bad body was sent
    for name, tid, status, text in bad_answers:
        expected_status, expected = BAD[name][1:]
        assert status == expected_status, (name, text)
        if status == 200:
            [span] = _stored_spans(store, tid)
            assert span["attributes"][0]["value"] == {"doubleValue": expected}, name
        else:
            answer = json.loads(text)  # a google.rpc.Status, never problem+json
            assert answer["code"] == 3 and expected in answer["message"], (name, answer)
            assert _stored_spans(store, tid) == []
    _verify(store)


def test_the_sdk_exporter_sending_a_nan_attribute_gets_its_trace_stored(
    served: tuple[str, str, EventStore],
) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    origin, token, store = served
    memory = InMemorySpanExporter()
    with provider(SimpleSpanProcessor(memory)).get_tracer("nan").start_as_current_span("chat") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "The score is not a number."}]}]))  # fmt: skip
        span.set_attribute("s", float("nan"))
        span.set_attribute("scores", [1.5, float("inf"), float("-inf")])
        tid = format(span.get_span_context().trace_id, "032x")
    exporter = OTLPSpanExporter(endpoint=f"{origin}/v1/traces", headers={"Authorization": f"Bearer {token}"})
    assert exporter.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
    exporter.shutdown()

    [stored] = _stored_spans(store, tid)
    values = {a["key"]: a["value"] for a in stored["attributes"]}
    assert values["s"] == {"doubleValue": "NaN"}
    doubles = [v["doubleValue"] for v in values["scores"]["arrayValue"]["values"]]
    assert doubles == [1.5, "Infinity", "-Infinity"]
    [done] = flush(origin, token, tid)
    assert load_trace(store, done["trace_id"]).steps[0].content == "The score is not a number."
    _verify(store)


def _verify(store: EventStore) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", store.url, "store", "verify"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
