"""Reviewers' feedback on findings: a label (confirmed or dismissed), its reason, who and when.

Each label is a ``FindingFeedback`` event in the stream ``feedback-{report_id}``, so the report it
judges never changes and every label ever given stays in the store. A later label of the same
finding supersedes an earlier one; a detector's precision is its confirmed findings over its
labelled ones, each finding counted once, by its latest label. Findings without a detector (filed
by an auditor agent) count under the report's engine.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auditor.core.errors import InputError, NotFoundError
from auditor.core.store import EventStore
from auditor.core.store.reports import load_report
from schemas import AuditReport, NewEvent

FEEDBACK_EVENT = "FindingFeedback"
LABELS = ("confirmed", "dismissed")
MAX_REASON = 2000


def feedback_stream(report_id: str) -> str:
    return f"feedback-{report_id}"


def detector_of(report: AuditReport, finding_id: str) -> str:
    """The detector that filed the finding (the engine for an auditor agent's own findings)."""
    finding = _finding(report, finding_id)
    return finding.detector or report.engine


def record_feedback(
    store: EventStore, report_id: str, finding_id: str, label: str, reason: str, reviewer: dict[str, str]
) -> dict[str, Any]:
    """Append one label of one finding; returns the event's payload. The finding must be in the
    report, the label one of ``LABELS`` and the reason said (a label nobody can explain teaches
    nothing)."""
    if label not in LABELS:
        raise InputError(f"unknown label '{label}'", field="label", hint=f"valid labels: {', '.join(LABELS)}")
    reason = reason.strip()
    if not any(unicodedata.category(c)[0] in "LNPS" for c in reason):  # zero-width spaces are no reason
        raise InputError("a label needs a reason", field="reason", hint="say why the finding holds or not")
    if len(reason) > MAX_REASON:
        raise InputError(
            f"the reason has {len(reason):,} characters", field="reason", hint=f"at most {MAX_REASON:,}"
        )
    report = load_report(store, report_id)
    finding = _finding(report, finding_id)
    payload = {
        "report_id": report_id,
        "trace_id": report.trace_id,
        "finding_id": finding_id,
        "detector": detector_of(report, finding_id),
        "risk_class": finding.risk_class.value,
        "label": label,
        "reason": reason,
        "reviewer": reviewer,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    store.append(feedback_stream(report_id), [NewEvent(type=FEEDBACK_EVENT, payload=payload)])
    return payload


def _finding(report: AuditReport, finding_id: str) -> Any:
    for finding in report.findings:
        if finding.finding_id == finding_id:
            return finding
    raise NotFoundError(
        f"report '{report.report_id}' has no finding '{finding_id}'",
        hint=f"its findings: {', '.join(f.finding_id for f in report.findings) or 'none'}",
    )


def feedback_of(store: EventStore, report_id: str) -> list[dict[str, Any]]:
    """Every label given on the report's findings, oldest first."""
    return [ev.payload for ev in store.read_stream(feedback_stream(report_id)) if ev.type == FEEDBACK_EVENT]


def latest_labels(store: EventStore) -> list[dict[str, Any]]:
    """Each labelled finding's latest label, in the order the findings were first labelled."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for ev in store.read_all(types=[FEEDBACK_EVENT]):
        latest[(ev.payload["report_id"], ev.payload["finding_id"])] = ev.payload
    return list(latest.values())


def dataset(store: EventStore) -> Iterator[dict[str, Any]]:
    """Labelled findings as training or evaluation records: the finding as filed, its evidence
    quotes, the label and who gave it, when and why."""
    reports: dict[str, AuditReport] = {}
    for label in latest_labels(store):
        report_id = label["report_id"]
        if report_id not in reports:
            reports[report_id] = load_report(store, report_id)
        finding = _finding(reports[report_id], label["finding_id"])
        yield {
            "report_id": report_id,
            "trace_id": label["trace_id"],
            "finding_id": label["finding_id"],
            "detector": label["detector"],
            "finding": finding.model_dump(mode="json"),
            "quotes": [
                {"step_id": u.step_id, "edge_ref": u.edge_ref, "quote": u.quote} for u in finding.evidence
            ],
            "label": label["label"],
            "reason": label["reason"],
            "reviewer": label["reviewer"],
            "at": label["at"],
        }


@dataclass(frozen=True)
class Precision:
    """One detector's labelled findings; ``precision`` is None until one is labelled."""

    detector: str
    confirmed: int
    dismissed: int

    @property
    def precision(self) -> float | None:
        labelled = self.confirmed + self.dismissed
        return self.confirmed / labelled if labelled else None


def precision_by_detector(counts: Iterable[tuple[str, str, int]]) -> list[Precision]:
    """Per-detector precision from (detector, label, findings) counts, by detector name."""
    tally: dict[str, dict[str, int]] = {}
    for detector, label, n in counts:
        tally.setdefault(detector, dict.fromkeys(LABELS, 0))[label] = n
    return [Precision(d, t["confirmed"], t["dismissed"]) for d, t in sorted(tally.items())]
