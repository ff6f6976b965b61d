"""The write side: submit a trace for audit (any importer format), and a server-sent event
stream of newly filed reports."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import AsyncIterator
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Annotated, Literal

import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from auditor.core.errors import AuditorError, InputError
from auditor.surfaces.server.auth import Principal, require
from auditor.surfaces.server.index import SEVERITY_NAME, SEVERITY_RANK
from auditor.surfaces.server.models import AuditResponse, AuditResult
from auditor.surfaces.server.problems import Problem

router = APIRouter(prefix="/api")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
POLL_SECONDS = 0.5
MAX_POSITION = 2**63 - 2  # a position the stream can still add one to within a signed 64-bit integer
KEEPALIVE_SECONDS = 15.0
_CLI_OPTIONS = {"--trace-id": "trace_id", "--input-format": "format"}  # as the import path names them


def _as_api(text: str) -> str:
    """A message of the import path in this endpoint's words: its query parameters, not the CLI's
    options (``field '--trace-id'`` reads ``query parameter 'trace_id'``)."""
    for option, parameter in _CLI_OPTIONS.items():
        text = text.replace(f"field '{option}'", f"query parameter '{parameter}'").replace(option, parameter)
    return text.replace(": Value error, ", ": ")


def _upload_name(filename: str) -> str:
    name = _SAFE_NAME.sub("_", Path(filename).name).strip("._") or "trace.jsonl"
    return name[:120]


@router.post("/audit", response_model=AuditResponse, status_code=201, tags=["audit"])
async def submit_for_audit(
    request: Request,
    _: Annotated[Principal, Depends(require("ingest"))],
    filename: Annotated[
        str, Query(description="Name of the uploaded file; its extension helps detection.")
    ] = "trace.jsonl",
    format: Annotated[str, Query(description="Importer name, or auto to detect it.")] = "auto",
    mode: Literal["annotated", "topology", "none"] = "annotated",
    redact: Annotated[
        bool,
        Query(
            description="Replace secrets, e-mails and phone numbers before storing "
            "(always on when the server runs with --redact)."
        ),
    ] = False,
    trace_id: Annotated[
        str | None,
        Query(description="Store the body's one trace under this new id."),
    ] = None,
    policy: Annotated[
        str | None,
        Query(
            description="A policy the server knows (`serve --policy`), by name; default: the server's choice."
        ),
    ] = None,
    outcome: Annotated[
        Literal["failed", "succeeded", "unknown"] | None,
        Query(
            description="The run's outcome, as `review --outcome`; default: the source's record, else inferred."
        ),
    ] = None,
) -> AuditResponse:
    """Store the trace(s) in the request body (any importer's format) in one transaction, audit
    each as stored with the rules engine, file the reports; returns the trace and report ids.
    Nothing is stored for bad input; other content under a stored trace id is a 409 conflict."""
    from auditor.audit.review import review_file

    config = request.app.state.config
    policies = request.app.state.policies
    if policy is not None and policies is None:
        raise InputError(
            f"unknown policy '{policy}' (known: none)", field="policy", hint="serve --policy FILE|DIR"
        )
    chosen = policies.named(policy) if policy is not None else None
    name = _upload_name(filename)
    with tempfile.TemporaryDirectory(prefix="auditor-upload-") as folder:
        path = Path(folder) / name
        with path.open("wb") as out:
            async for chunk in request.stream():
                out.write(chunk)
        if path.stat().st_size == 0:
            raise InputError("the request body is empty", path=name, hint="send the trace file as the body")
        store = request.app.state.store
        try:
            audit = partial(
                review_file,
                store,
                path,
                fmt=format,
                mode=mode,
                redact=redact or config.redact,
                patterns=config.redact_patterns,
                source=name,
                trace_id=trace_id,
                policy=chosen,
                outcome=outcome,
                choose_policy=policies.for_trace if policies and not chosen else None,
            )
            outcomes = await anyio.to_thread.run_sync(audit, limiter=request.app.state.audit_limiter)
        except AuditorError as exc:  # name the upload, not the temporary folder, and this API's parameters
            exc.args = (_as_api(str(exc).replace(str(path), name)),)
            exc.hint = exc.hint and _as_api(exc.hint)
            raise
    await run_in_threadpool(request.app.state.index.refresh)
    return AuditResponse(
        results=[
            AuditResult(
                trace_id=o.trace.header.trace_id,
                report_id=o.report.report_id,
                importer=o.importer,
                steps=len(o.trace.steps),
                new_events=o.new_events,
                decision=o.report.decision.value,
                findings=len(o.report.findings),
            )
            for o in outcomes
        ]
    )


@router.get(
    "/events/reports",
    tags=["audit"],
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "One `report` event per filed report."}
    },
)
async def report_events(
    request: Request,
    _: Annotated[Principal, Depends(require("read"))],
    after: Annotated[
        int | None,
        Query(ge=0, le=MAX_POSITION, description="Global position to start after (default: now)."),
    ] = None,
    limit: Annotated[int | None, Query(ge=1, description="Close the stream after this many events.")] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Server-sent events: each newly filed report (id = its global position, so a client that
    reconnects with Last-Event-ID misses nothing)."""
    store = request.app.state.store
    if last_event_id and last_event_id.isdigit():
        start = int(last_event_id)
        if start > MAX_POSITION:
            raise Problem(400, "bad-request", f"header 'Last-Event-ID' must be at most {MAX_POSITION}")
    elif after is not None:
        start = after
    else:
        start = await run_in_threadpool(store.last_position)

    def fetch(position: int) -> list:
        return list(islice(store.read_all(from_position=position + 1, types=["ReportFiled"]), 100))

    async def stream() -> AsyncIterator[str]:
        position, sent, idle = start, 0, 0.0
        yield f": reports after position {position}\n\n"
        while limit is None or sent < limit:
            if await request.is_disconnected():
                return
            batch = await run_in_threadpool(fetch, position)
            for ev in batch:
                position = ev.global_position
                yield f"id: {position}\nevent: report\ndata: {json.dumps(_event_data(ev.payload))}\n\n"
                sent += 1
                if limit is not None and sent >= limit:
                    return
            if not batch:
                await asyncio.sleep(POLL_SECONDS)
                idle += POLL_SECONDS
                if idle >= KEEPALIVE_SECONDS:
                    idle = 0.0
                    yield ": keepalive\n\n"

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def _event_data(payload: dict) -> dict:
    report = payload["report"]
    findings = report.get("findings") or []
    top = max((SEVERITY_RANK.get(f.get("severity"), 0) for f in findings), default=0)
    return {
        "report_id": report["report_id"],
        "trace_id": report["trace_id"],
        "decision": report.get("decision"),
        "findings": len(findings),
        "max_severity": SEVERITY_NAME.get(top),
        "engine": report.get("engine"),
        "created_at": report.get("created_at"),
    }
