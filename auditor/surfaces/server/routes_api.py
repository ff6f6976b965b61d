"""The read side of the API: traces (search, steps, graph), reports (every format) and repairs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic_core import to_json

from auditor.core.errors import InputError, NotFoundError
from auditor.surfaces.server.auth import Principal, require
from auditor.surfaces.server.models import RepairList, ReportList, StepsPage, TraceList, TraceSummary, WhoAmI
from auditor.surfaces.server.repairs import get_repair, list_repairs
from auditor.surfaces.server.search import COUNT_CAP, MAX_OFFSET, Page, ReportQuery, TraceQuery, Triage
from schemas.report import RiskClass


def no_nul(request: Request) -> None:
    """Refuse a NUL character (U+0000) in the path or a query parameter: ids and names never hold
    one (see docs/input.md), and a database fails on it (PostgreSQL) or, as SQLite's LIKE does,
    silently reads a pattern only up to it."""
    for name, value in request.query_params.multi_items():
        if "\x00" in name or "\x00" in value:
            shown = name.replace("\x00", "\\x00")
            raise InputError(f"query parameter '{shown}' holds a NUL character (U+0000)", hint="leave it out")
    if "\x00" in request.url.path:
        raise InputError("the path holds a NUL character (U+0000)", hint="no id holds one")


def declared_only(request: Request) -> None:
    """Refuse a query parameter the listing does not declare: a filter misspelt (``min_rsik``) or
    one of the other listing's (``has_findings`` on reports) was ignored, and the answer held
    every row as if it were filtered."""
    route = request.scope.get("route")
    if route is None:
        return
    known = _query_names(route.dependant)
    for name in request.query_params:
        if name not in known:
            raise InputError(
                f"unknown query parameter '{name}'", hint=f"this listing takes: {', '.join(sorted(known))}"
            )


def _query_names(dependant: Any) -> set[str]:
    """The query parameters an endpoint declares, its dependencies' (the triage filters) too."""
    return {p.alias for p in dependant.query_params} | {
        n for d in dependant.dependencies for n in _query_names(d)
    }


router = APIRouter(prefix="/api", dependencies=[Depends(no_nul)])
Reader = Annotated[Principal, Depends(require("read"))]
Repairer = Annotated[Principal, Depends(require("repair"))]
Severity = Literal["info", "low", "medium", "high", "critical"]
ExactTotal = Annotated[
    bool,
    Query(description=f"Count every match; by default `total` stops past {COUNT_CAP:,} (see `total_exact`)."),
]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description=f"Rows to skip, at most {MAX_OFFSET:,}.")]
Order = Annotated[
    Literal["newest", "oldest", "riskiest"],
    Query(description="`riskiest`: highest risk score first, newest first among equals."),
]
Decision = Literal["risk_identified", "no_material_risk", "inconclusive"]


def triage(
    min_risk: Annotated[
        float | None, Query(ge=0, le=1, allow_inf_nan=False, description="Risk score at or above.")
    ] = None,
    outcome: Annotated[
        Literal["failed", "succeeded", "unknown"] | None, Query(description="The run's outcome.")
    ] = None,
    decision: Annotated[Decision | None, Query(description="The report's decision.")] = None,
    detector: Annotated[str | None, Query(description="Some finding filed by this detector.")] = None,
    risk_class: Annotated[RiskClass | None, Query(description="Some finding of this risk class.")] = None,
    agent: Annotated[
        str | None,
        Query(description="The attribution's agent or a finding's responsible participant, any case."),
    ] = None,
    service: Annotated[str | None, Query(description="The service that ran the trace, any case.")] = None,
) -> Triage:
    """The filters on what the (latest) report says, shared by traces and reports."""
    return Triage(min_risk, outcome, decision, detector, risk_class and risk_class.value, agent, service)


Triaged = Annotated[Triage, Depends(triage)]


def _head(request: Request) -> int:
    return request.app.state.head(request)


def _json(body: bytes | str, media: str = "application/json") -> Response:
    return Response(content=body, media_type=media)


def _listing(key: str, page: Page, offset: int, limit: int) -> Response:
    """A page of index rows as JSON. The rows come from the index's typed columns, shaped as the
    response model declares, so they are written without validating each one again."""
    body: dict[str, Any] = {"total": page.total, "total_exact": page.exact, "offset": offset, "limit": limit}
    body[key] = page.rows
    return _json(to_json(body))


@router.get("/whoami", response_model=WhoAmI, tags=["auth"])
def whoami(who: Reader) -> WhoAmI:
    """The token's name and scopes."""
    return WhoAmI(token_id=who.token_id, name=who.name, scopes=list(who.scopes))


@router.get("/traces", response_model=TraceList, tags=["traces"], dependencies=[Depends(declared_only)])
def search_traces(
    request: Request,
    _: Reader,
    triaged: Triaged,
    source: Annotated[str | None, Query(description="Substring of the source, any case.")] = None,
    framework: Annotated[str | None, Query(description="Framework, any case.")] = None,
    participant: Annotated[str | None, Query(description="An actor or named recipient, any case.")] = None,
    text: Annotated[
        str | None, Query(description="Words that must each begin a word of the trace, cut at underscores.")
    ] = None,
    has_findings: Annotated[bool | None, Query(description="Latest report has findings (or none).")] = None,
    severity: Annotated[Severity | None, Query(description="Some finding at this severity or above.")] = None,
    since: Annotated[datetime | None, Query(description="Trace time at or after (ISO 8601).")] = None,
    until: Annotated[datetime | None, Query(description="Trace time before (ISO 8601).")] = None,
    order: Order = "newest",
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    exact_total: ExactTotal = False,
) -> Response:
    """List and search traces; every filter narrows the result. The triage filters (risk, outcome,
    decision, detector, risk class, agent, service) read each trace's latest report."""
    q = TraceQuery(
        source=source, framework=framework, participant=participant, text=text, has_findings=has_findings,
        severity=severity, since=since, until=until, triage=triaged, order=order, offset=offset, limit=limit,
        exact_total=exact_total,
    )  # fmt: skip
    return _listing("traces", request.app.state.index.traces(q, _head(request)), offset, limit)


@router.get("/traces/{trace_id}", response_model=TraceSummary, tags=["traces"])
def get_trace(request: Request, _: Reader, trace_id: str) -> Response:
    """One trace's summary, with its latest report."""
    row = request.app.state.index.trace(trace_id, _head(request))
    if row is None:
        raise NotFoundError(f"no trace with id '{trace_id}' in the store", hint="run 'auditor traces list'")
    return _json(TraceSummary(**row).model_dump_json())


@router.get("/traces/{trace_id}/steps", response_model=StepsPage, tags=["traces"])
def get_steps(
    request: Request,
    _: Reader,
    trace_id: str,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Response:
    """A page of the trace's steps, in order (verbatim content, tool calls, recipients, refs)."""
    return _json(request.app.state.views.steps(trace_id, offset, limit, _head(request)))


@router.get("/traces/{trace_id}/graph", tags=["traces"])
def get_graph(
    request: Request,
    _: Reader,
    trace_id: str,
    mode: Literal["annotated", "topology"] = "annotated",
) -> Response:
    """The interaction graph as node-link JSON: nodes, one link per interaction (with `edge_ref`
    and `step_id`), and in annotated mode the annotation layer."""
    return _json(request.app.state.views.graph(trace_id, mode, _head(request)))


@router.get("/traces/{trace_id}/tests", tags=["traces"])
def get_tests(request: Request, _: Reader, trace_id: str) -> Response:
    """A coding run's test timeline: each edit of the submitted files, each test or check run with
    the code it ran on (`original` or `changed`) and the runner's summary, the last word on every
    test that failed (`verdicts`), and what the runs show of the fix (`evidence`, and as text
    `evidence_lines`). Empty lists for a run that ran no code."""
    return _json(request.app.state.views.tests(trace_id, _head(request)))


@router.get("/reports", response_model=ReportList, tags=["reports"], dependencies=[Depends(declared_only)])
def search_reports(
    request: Request,
    _: Reader,
    triaged: Triaged,
    trace_id: str | None = None,
    since: Annotated[datetime | None, Query(description="Filed at or after (ISO 8601).")] = None,
    until: Annotated[datetime | None, Query(description="Filed before (ISO 8601).")] = None,
    order: Order = "newest",
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    exact_total: ExactTotal = False,
) -> Response:
    """Reports, newest first (or riskiest), optionally of one trace, filtered as traces are."""
    q = ReportQuery(
        trace_id=trace_id, since=since, until=until, triage=triaged, order=order, offset=offset, limit=limit,
        exact_total=exact_total,
    )  # fmt: skip
    return _listing("reports", request.app.state.index.reports(q, _head(request)), offset, limit)


@router.get(
    "/reports/{report_id}",
    tags=["reports"],
    responses={
        200: {"content": {m: {} for m in ("application/json", "text/markdown", "application/sarif+json")}}
    },
)
def get_report(
    request: Request,
    _: Reader,
    report_id: str,
    format: Literal["json", "md", "sarif", "html"] = "json",
) -> Response:
    """The V3 report as JSON, Markdown, SARIF 2.1.0 or a standalone HTML page."""
    body, media = request.app.state.views.report(report_id, format, _head(request))
    headers = {
        "Content-Security-Policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    }
    return Response(content=body, media_type=media, headers=headers if format == "html" else None)


@router.get("/reports/{report_id}/validation", tags=["reports"])
def get_validation(request: Request, _: Reader, report_id: str) -> dict:
    """The validator's record filed with the report: schema errors and each evidence unit's resolution."""
    return request.app.state.views.validation(report_id) or {}


@router.get("/policies", tags=["audit"])
def policies(request: Request, _: Reader) -> dict[str, Any]:
    """The declared policies this server audits under (`serve --policy`): each one's name (what
    `POST /api/audit?policy=` takes), digest and description, and the selector that picks one per
    trace (null: a single policy for every trace, or none)."""
    known = request.app.state.policies
    if known is None:
        return {"policies": [], "selector": None}
    return {
        "policies": [
            {"name": p.name, "digest": p.digest, "description": p.description}
            for p in (known.policies[n] for n in known.names)
        ],
        "selector": known.selector.model_dump() if known.selector is not None else None,
    }


@router.get("/repairs", response_model=RepairList, tags=["repairs"])
def repairs(
    request: Request, _: Repairer, report_id: str | None = None, trace_id: str | None = None
) -> RepairList:
    """Repairs with their latest review verdict, retest figures, decision and PR proposal."""
    return RepairList(repairs=list_repairs(request.app.state.store, report_id, trace_id))


@router.get("/repairs/{repair_id}", tags=["repairs"])
def repair(request: Request, _: Repairer, repair_id: str) -> dict:
    """One repair in full: plan, each round's patch, diff, scope and four-dimension review,
    the retest cohort and figures, the decision and the PR proposal."""
    return get_repair(request.app.state.store, repair_id)
