"""OTLP/HTTP on ``POST /v1/traces``: an agent's OpenTelemetry exporter (or a collector) sends its
spans here, and each trace is audited once it is complete, with no file in between.

The OTLP/HTTP contract: ``ExportTraceServiceRequest`` bodies in ``application/x-protobuf`` or
``application/json``, optionally ``Content-Encoding: gzip`` (every member of a multi-member stream,
as gzip itself reads one; bytes after the last member refuse the request); 200 with an
``ExportTraceServiceResponse`` in the request's encoding (``partialSuccess`` counting the spans
refused: unusable ones, and span ids already received with other content; with the first reason);
no message quotes the request (``ingest.otlp_request``); errors carry a ``google.rpc.Status`` in
that encoding: 400 a body that is no request, 401/403 a missing or scope-less token (the ingest
scope; the OTLP exporters send it as ``OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <token>``),
413 a body over ``MAX_OTLP_BYTES`` (compressed or not), 415 another media type or encoding, 503
(retryable) when the store is down, 500 an internal error (that request's alone: see
``ingest.group_commit``). Spans are stored on arrival and assembled by ``ingest.span_assembly``: a
200 means the request's spans are committed (concurrent requests share one transaction, a group
commit), and with ``--redact`` they are redacted before they are stored. A background thread
completes traces (``AUDITOR_SPAN_IDLE_S``, default 30 s after the root span's end) and audits them
in-process (``auditor.audit.span_audits``); the importers and the engine are loaded before the server
takes requests. ``POST /api/otlp/flush`` completes open traces now.
"""

from __future__ import annotations

import logging
import sys
import threading
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from auditor.audit.span_audits import InProcessAudit
from auditor.audit.workers import WARM_UPS
from auditor.core.errors import InputError, StoreError
from auditor.surfaces.server.auth import Principal, authenticate, require
from auditor.surfaces.server.problems import Problem
from ingest.otlp_request import JSON, PROTOBUF, decode
from ingest.span_assembly import AssembledTrace, AssemblySettings, SpanAssembly
from ingest.span_redact import SpanRedaction

log = logging.getLogger("auditor.surfaces.server")
MAX_OTLP_BYTES = 8 * 1024 * 1024  # a request body, before and after decompression
SOURCE = "otlp-http"
AUDIT_ENGINE = "rules"  # the in-process audit's engine (embedded, no model)
# The span writer releases the interpreter on each SQLite call, and gets it back only when the
# thread holding it (a request decoding its body) yields, at the latest after the switch interval:
# 5 ms by default, paid several times per group commit. At 0.5 ms, 20 clients' exports were
# accepted 1-36 % faster for the same CPU per span (5 pairs of runs of benchmarks/otlp_bench.py's
# HTTP phase, server in-process and in its own process).
SWITCH_INTERVAL_S = 0.0005
_GRPC = {400: 3, 401: 16, 403: 7, 413: 8, 415: 3, 500: 13, 503: 14}  # google.rpc.Code per status


class _Completer:
    """The background thread that completes and audits span traces (and recovers at start)."""

    def __init__(self, assembly: SpanAssembly) -> None:
        self.assembly = assembly
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="span-assembly", daemon=True)

    def _run(self) -> None:
        try:
            self.assembly.recover()
        except Exception:
            log.exception("span assembly recovery failed; open traces are retried on each tick")
        while not self.stop.wait(self.assembly.settings.tick_s):
            try:
                self.assembly.tick()
            except Exception:
                log.exception("span assembly tick failed; will retry")


def _warm_up(spans: SpanAssembly) -> None:
    """Load the importers and the audit engine before serving: otherwise the first trace
    completed pays for their imports (seconds), and the traces behind it wait."""
    try:
        spans.warm_up()
        WARM_UPS[AUDIT_ENGINE]()
    except Exception:  # a warm-up is an optimisation: the first trace loads what it needs anyway
        log.exception("warming up span assembly failed")


@asynccontextmanager
async def otlp_lifespan(app: FastAPI) -> AsyncIterator[None]:
    store = app.state.store
    settings = getattr(app.state, "span_settings", None) or AssemblySettings.from_env()
    config = app.state.config
    redaction = SpanRedaction(config.redact_patterns) if config.redact else None
    app.state.spans = SpanAssembly(
        store, settings, SOURCE, InProcessAudit(store, AUDIT_ENGINE, app.state.policies), redaction
    )
    await run_in_threadpool(_warm_up, app.state.spans)
    completer = _Completer(app.state.spans)
    completer.thread.start()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, SWITCH_INTERVAL_S))
    yield
    sys.setswitchinterval(switch)
    completer.stop.set()
    completer.thread.join(timeout=30)


router = APIRouter(lifespan=otlp_lifespan)


def _media(request: Request) -> str:
    return (request.headers.get("content-type") or "").split(";")[0].strip().lower()


def _status(code: int, message: str, media: str) -> Response:
    """An OTLP error: a google.rpc.Status in the request's encoding (JSON unless it was protobuf)."""
    grpc = _GRPC.get(code, 2)
    headers = {"Retry-After": "5"} if code == 503 else {}
    if code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="auditor"'
    if media == PROTOBUF:
        from google.rpc.status_pb2 import Status

        body = Status(code=grpc, message=message).SerializeToString()
        return Response(body, status_code=code, media_type=PROTOBUF, headers=headers)
    import json

    return Response(json.dumps({"code": grpc, "message": message}), code, headers, JSON)


def _success(rejected: int, error: str | None, media: str) -> Response:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    if media == PROTOBUF:
        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = error or ""
        return Response(response.SerializeToString(), media_type=PROTOBUF)
    import json

    body = (
        {"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": error or ""}} if rejected else {}
    )
    return Response(json.dumps(body), media_type=JSON)


def _inflate(body: bytes, encoding: str) -> bytes:
    """The body decoded from its Content-Encoding, never past MAX_OTLP_BYTES (a gzip bomb is a 413).
    A gzip stream may hold several members (``gzip(a) + gzip(b)``): all are read, in order."""
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise Problem(415, "unsupported-encoding", "the Content-Encoding is not supported (gzip or none)")
    out = bytearray()
    rest = body
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(rest, MAX_OTLP_BYTES + 1 - len(out))
        except zlib.error as exc:
            raise InputError(f"the gzip body is corrupt ({exc})", path="request body") from exc
        if len(out) > MAX_OTLP_BYTES:
            raise Problem(413, "too-large", f"the decompressed body exceeds {MAX_OTLP_BYTES} bytes")
        if not inflater.eof:
            raise InputError("the gzip body is truncated", path="request body")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)
        if not rest.startswith(b"\x1f\x8b"):
            raise InputError(
                f"the gzip body has {len(rest)} bytes after its end that are no gzip member",
                path="request body",
                hint="send the gzip stream alone",
            )


def _accept(spans: SpanAssembly, body: bytes, encoding: str, media: str) -> tuple[int, str | None]:
    """Inflate, decode and store a request's spans (one thread hop: the loop only moves bytes);
    returns once they are committed, with the spans refused and the first reason."""
    decoded = decode(_inflate(body, encoding), media)
    received = spans.receive(decoded.spans)
    refused = decoded.rejected + len(received.refused)
    return refused, decoded.first_error or next(iter(received.refused), None)


@router.post(
    "/v1/traces",
    tags=["otlp"],
    responses={200: {"content": {PROTOBUF: {}, JSON: {}}, "description": "ExportTraceServiceResponse"}},
)
async def export_traces(request: Request) -> Response:
    """OTLP/HTTP trace export: store the spans now, audit each trace once it is complete."""
    media = _media(request)
    try:
        authenticate(request, "ingest")
        if media not in (PROTOBUF, JSON):
            raise Problem(
                415, "unsupported-media-type", f"the Content-Type is not OTLP ({PROTOBUF} or {JSON})"
            )
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_OTLP_BYTES:
                raise Problem(413, "too-large", f"the request body exceeds {MAX_OTLP_BYTES} bytes")
        encoding = (request.headers.get("content-encoding") or "").strip().lower()
        refused, why = await run_in_threadpool(_accept, request.app.state.spans, bytes(body), encoding, media)
    except Problem as exc:
        return _status(exc.status, exc.detail, media)
    except InputError as exc:
        return _status(400, exc.one_line(), media)
    except StoreError as exc:
        log.warning("OTLP export refused, store unavailable: %s", exc.one_line())
        return _status(503, "the event store is unavailable; retry later", media)
    except Exception:  # still an OTLP answer; the group commit kept it from other requests
        log.exception("OTLP export failed")
        return _status(500, "internal error storing the spans (see the server log)", media)
    return _success(refused, why, media)


def _assembled(t: AssembledTrace) -> dict[str, Any]:
    return {
        "trace_id": t.trace_id,
        "otel_trace_id": t.otel_trace_id,
        "revision": t.revision,
        "steps": t.step_count,
        "reason": t.reason,
    }


@router.post("/api/otlp/flush", tags=["otlp"])
async def flush_spans(
    request: Request,
    _: Annotated[Principal, Depends(require("ingest"))],
    trace_id: Annotated[
        str | None,
        Query(description="The OpenTelemetry trace id (32 hex digits); all open traces if absent."),
    ] = None,
) -> dict[str, list[dict[str, Any]]]:
    """Complete span traces now, whatever their idle time; each is audited before this answers."""
    if trace_id is not None and (len(trace_id) != 32 or any(c not in "0123456789abcdef" for c in trace_id)):
        raise InputError("query parameter 'trace_id' must be 32 lowercase hex digits", field="trace_id")
    done = await run_in_threadpool(request.app.state.spans.flush, trace_id)
    return {"assembled": [_assembled(t) for t in done]}
