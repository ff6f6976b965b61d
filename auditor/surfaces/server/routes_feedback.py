"""Feedback on findings: a reviewer (scope ``review``) confirms or dismisses a finding with a
reason; every label is an event beside the report, which never changes (``auditor.audit.feedback``).
Per-detector precision is counted from each labelled finding's latest label in the index."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from auditor.audit.feedback import feedback_of, precision_by_detector, record_feedback
from auditor.core.errors import InputError
from auditor.surfaces.server.auth import Principal, require
from auditor.surfaces.server.models import Feedback, FeedbackIn, FeedbackList, PrecisionList
from auditor.surfaces.server.problems import Problem
from auditor.surfaces.server.routes_api import no_nul

router = APIRouter(prefix="/api", dependencies=[Depends(no_nul)], tags=["feedback"])
Reader = Annotated[Principal, Depends(require("read"))]
Reviewer = Annotated[Principal, Depends(require("review"))]


MAX_LABEL_BODY = 64 * 1024  # a label and a reason of MAX_REASON characters, escaped, with room


async def one_value_per_key(request: Request) -> None:
    """Refuse a body that gives a key twice (``{"label": "confirmed", …, "label": "dismissed"}``):
    JSON parsers keep one of them without a word, and which label was meant cannot be told. A
    body past ``MAX_LABEL_BODY`` is refused unread: parsing 16 MB held the server's event loop
    for a second, and a label never needs it."""
    body = await request.body()
    if len(body) > MAX_LABEL_BODY:
        raise Problem(413, "too-large", f"a label's body is at most {MAX_LABEL_BODY:,} bytes")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if twice := next((k for k in keys if keys.count(k) > 1), None):
            raise InputError(f"the body gives '{twice}' twice", field=twice, hint="give each field once")
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return  # not JSON (or nested past the parser): the body's own validation says so


@router.post("/reports/{report_id}/findings/{finding_id}/feedback", response_model=Feedback, status_code=201)
async def give_feedback(
    request: Request,
    who: Reviewer,
    _: Annotated[None, Depends(one_value_per_key)],  # after the token: a stranger learns nothing
    report_id: str,
    finding_id: str,
    body: FeedbackIn,
) -> Response:
    """Label one finding confirmed or dismissed, with the reason; a later label supersedes it."""
    reviewer = {"name": who.name, "token_id": who.token_id}
    store = request.app.state.store
    payload = await run_in_threadpool(
        record_feedback, store, report_id, finding_id, body.label, body.reason, reviewer
    )
    return Response(Feedback(**payload).model_dump_json(), status_code=201, media_type="application/json")


@router.get("/reports/{report_id}/feedback", response_model=FeedbackList)
def report_feedback(request: Request, _: Reader, report_id: str) -> FeedbackList:
    """Every label given on the report's findings, oldest first (the latest of each counts)."""
    request.app.state.views.report(report_id, "json", request.app.state.head(request))  # 404 if unknown
    return FeedbackList(feedback=[Feedback(**p) for p in feedback_of(request.app.state.store, report_id)])


@router.get("/feedback/precision", response_model=PrecisionList)
def precision(request: Request, _: Reader) -> PrecisionList:
    """Each detector's confirmed and dismissed findings and its precision, from the labels so far."""
    counts = request.app.state.index.feedback_counts(request.app.state.head(request))
    return PrecisionList(
        detectors=[{**p.__dict__, "precision": p.precision} for p in precision_by_detector(counts)]
    )
