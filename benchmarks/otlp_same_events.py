"""Do two checkouts of the service store the same events for the same OTLP exports?

A change to the OTLP path (span assembly, the import of a completed trace, the in-process audit)
must not change what the store holds. This sends one fixed set of export requests to a real
``auditor serve`` started from each checkout (its own process and SQLite store), completes every
trace with ``POST /api/otlp/flush`` (which answers once each trace is audited), and compares the
stored events: stream, version, type, idempotency key and payload, byte for byte as the store
wrote them, less what a clock or a random id puts there (listed in ``VOLATILE``); the trace
digests the reports name are printed.

The requests: the toy GenAI agent's runs encoded by the OpenTelemetry SDK (protobuf), one of them
split over two requests with a flush between (a late span: a second revision), the OTLP JSON
fixtures in tests/fixtures/ingest, the Vercel AI SDK and OpenInference fixtures rewritten as OTLP
JSON, and a span without agent content (a rejected revision).

    python benchmarks/otlp_same_events.py BEFORE_ROOT AFTER_ROOT
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROTO, JSON = "application/x-protobuf", "application/json"
# Payload fields a clock or a random id fills (at any depth): they differ between any two runs.
VOLATILE = frozenset({"created_at", "generated_at", "recorded_at", "started_at", "finished_at", "audit_id"})


def _requests() -> list[tuple[str, bytes] | None]:
    """(media type, body) in sending order; None where the exports so far are flushed."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.otel_toy_agent import encoded_spans, provider, run_agent

    memory = InMemorySpanExporter()
    tp = provider(SimpleSpanProcessor(memory))
    out: list[tuple[str, bytes] | None] = []
    for order in ("E-1", "E-2", "E-3"):
        run_agent(tp, order=order)
        out.append((PROTO, encoded_spans(list(memory.get_finished_spans()))))
        memory.clear()
    run_agent(tp, order="E-late")
    spans = list(memory.get_finished_spans())
    memory.clear()
    out += [(PROTO, encoded_spans(spans[:3])), None, (PROTO, encoded_spans(spans[3:]))]
    with tp.get_tracer("web").start_as_current_span("GET /health") as span:
        span.set_attribute("http.request.method", "GET")
    out.append((PROTO, encoded_spans(list(memory.get_finished_spans()))))
    for name in ("otel_genai.json", "otel_genai_failure.json", "otel_genai_generations.json"):
        out.append((JSON, (REPO / "tests/fixtures/ingest" / name).read_bytes()))
    vercel = json.loads((REPO / "tests/fixtures/real/vercel-ai/ai_sdk_tool_run.json").read_text())
    out.append((JSON, _otlp(vercel)))
    for i, name in enumerate(
        ("openinference_client_span_tool_calls.json", "otel_genai_client_span_tool_calls.json")
    ):
        attrs = json.loads((REPO / "tests/fixtures/real/openinference-genai" / name).read_text())
        record = {"spanContext": {"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}"}, "attributes": attrs}
        out.append(
            (
                JSON,
                _otlp([{"name": name, "startTime": [1700000000, 0], "endTime": [1700000001, 0], **record}]),
            )
        )
    out.append(None)
    return out


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _value(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def _nanos(t: Any) -> str:
    return str(t[0] * 1_000_000_000 + t[1]) if isinstance(t, list) else str(t or 0)


def _otlp(records: list[dict[str, Any]]) -> bytes:
    """Span records (the OTel JS SDK's shape, flat attributes) as one OTLP JSON request."""
    spans = []
    for r in records:
        span = {
            "traceId": r["spanContext"]["traceId"],
            "spanId": r["spanContext"]["spanId"],
            "name": r.get("name", ""),
            "startTimeUnixNano": _nanos(r.get("startTime")),
            "endTimeUnixNano": _nanos(r.get("endTime")),
            "attributes": [{"key": k, "value": _value(v)} for k, v in (r.get("attributes") or {}).items()],
        }
        if r.get("parentSpanId"):
            span["parentSpanId"] = r["parentSpanId"]
        spans.append(span)
    body = {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": spans}]}]
    }
    return json.dumps(body).encode()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(root: Path, db: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", f"sqlite:///{db}", *args]
    return subprocess.run(cmd, cwd=root, check=True, capture_output=True, text=True).stdout


def run(root: Path, requests: list[tuple[str, bytes] | None], folder: Path) -> list[tuple]:
    """Send ``requests`` to ``auditor serve`` started from ``root``; the stored events."""
    import httpx

    db = folder / "auditor.db"
    token = json.loads(_cli(root, db, "tokens", "create", "--name", "check", "--scope", "ingest", "--json"))[
        "token"
    ]
    port = _port()
    env = {**os.environ, "AUDITOR_SPAN_IDLE_S": "3600"}
    args = ["--store", f"sqlite:///{db}", "serve", "--port", str(port), "--log-level", "warning"]
    with (folder / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "auditor.surfaces.cli.main", *args], cwd=root, env=env, stderr=log
        )
    origin, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{origin}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"serve from {root} did not start: {(folder / 'serve.log').read_text()[-2000:]}"
                )
            time.sleep(0.2)
        with httpx.Client(timeout=120) as http:
            for item in requests:
                if item is None:
                    http.post(f"{origin}/api/otlp/flush", headers=auth).raise_for_status()
                    continue
                media, body = item
                r = http.post(f"{origin}/v1/traces", content=body, headers={**auth, "Content-Type": media})
                r.raise_for_status()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT stream_id, stream_version, type, idempotency_key, payload FROM events "
            "WHERE stream_id NOT LIKE 'token%' ORDER BY global_position"
        ).fetchall()
    return [(s, v, t, k, json.dumps(_stable(json.loads(p)), ensure_ascii=False)) for s, v, t, k, p in rows]


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE else _stable(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    args = ap.parse_args()
    requests = _requests()
    with tempfile.TemporaryDirectory(prefix="otlp-same-") as tmp:
        runs = []
        for name, root in (("before", args.before), ("after", args.after)):
            folder = Path(tmp) / name
            folder.mkdir()
            runs.append(run(root.resolve(), requests, folder))
    before, after = runs
    types: dict[str, int] = {}
    for row in after:
        types[row[2]] = types.get(row[2], 0) + 1
    print(f"{len(before)} events before, {len(after)} after; by type after: {json.dumps(types)}")
    digests = sorted(
        json.loads(row[4]).get("report", {}).get("trace_digest", "")
        for row in after
        if row[2] == "ReportFiled"
    )
    print(f"trace digests named by the reports: {len(digests)}")
    differ = [(b, a) for b, a in zip(before, after, strict=False) if b != a]
    for b, a in differ[:5]:
        print(f"DIFFERS\n  before {b}\n  after  {a}")
    same = not differ and len(before) == len(after)
    print("same events" if same else f"{len(differ)} events differ (lengths {len(before)}, {len(after)})")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
