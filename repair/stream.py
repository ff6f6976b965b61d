"""A repair's events in the store (stream ``repair-{id}``) and the projection that reads them back.

Every pipeline step appends one event: RepairOpened (what was audited and with what), then per
round RepairProposed and RepairReviewed, then RetestCompleted, RepairDecided and PRProposed. The
state is rebuilt from the stream on demand; nothing is updated in place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from auditor.core.errors import NotFoundError
from auditor.core.store import EventStore
from schemas.events import NewEvent
from schemas.repair import PRProposal, RepairDecision, RepairPatch, RetestResult, ReviewVerdict, ScopeCheck
from schemas.report import RepairPlanItem
from worlds import Workflow

OPENED, PROPOSED, REVIEWED = "RepairOpened", "RepairProposed", "RepairReviewed"
RETESTED, DECIDED, PR_PROPOSED = "RetestCompleted", "RepairDecided", "PRProposed"


def repair_stream(repair_id: str) -> str:
    return f"repair-{repair_id}"


def repair_id_for(report_id: str, item_ids: list[str], workflow_digest: str) -> str:
    blob = json.dumps([report_id, sorted(item_ids), workflow_digest], sort_keys=True)
    return "rep-" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def record(store: EventStore, repair_id: str, type_: str, payload: dict[str, Any], key: str) -> None:
    """Append one step; re-delivering the same step (same key) appends nothing."""
    event = NewEvent(type=type_, payload=payload, idempotency_key=f"repair:{repair_id}:{type_}:{key}")
    store.append(repair_stream(repair_id), [event])


@dataclass(frozen=True)
class AuditContext:
    """What the repair was diagnosed from: the retest must match it (source, policy, auditor)."""

    world: str
    report_id: str
    trace_id: str
    finding_ids: list[str]
    items: list[RepairPlanItem]
    workflow_yaml: str
    workflow_origin: str
    source_digest: str
    policy_digest: str
    audited_identity_keys: list[str]
    audited_episode_ids: list[str]
    auditor_engine: str
    graph_mode: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    audit_policy_path: str | None = None
    audit_policy_digest: str | None = None

    def payload(self) -> dict[str, Any]:
        data = self.__dict__.copy()
        data["items"] = [i.model_dump(mode="json") for i in self.items]
        return data

    @staticmethod
    def from_payload(p: dict[str, Any]) -> AuditContext:
        data = dict(p)
        data["items"] = [RepairPlanItem.model_validate(i) for i in p["items"]]
        return AuditContext(**data)

    def workflow(self) -> Workflow:
        return Workflow.from_yaml(self.workflow_yaml, self.workflow_origin)


@dataclass
class Round:
    patch: RepairPatch
    patched_yaml: str
    scope: ScopeCheck
    review: ReviewVerdict | None = None


@dataclass
class RepairState:
    repair_id: str
    context: AuditContext
    rounds: list[Round] = field(default_factory=list)
    retest: RetestResult | None = None
    decision: RepairDecision | None = None
    pr: PRProposal | None = None

    @property
    def latest(self) -> Round:
        if not self.rounds:
            raise NotFoundError(
                f"repair {self.repair_id} has no proposal", hint="run 'auditor repair propose'"
            )
        return self.rounds[-1]

    def approved_round(self) -> Round | None:
        """The latest round, if its patch was reviewed and approved (the only loadable artifact)."""
        last = self.rounds[-1] if self.rounds else None
        if last and last.review and last.review.approved and last.review.patch_id == last.patch.patch_id:
            return last
        return None


def load_repair(store: EventStore, repair_id: str) -> RepairState:
    state: RepairState | None = None
    for ev in store.read_stream(repair_stream(repair_id)):
        p = ev.payload
        if ev.type == OPENED:
            state = RepairState(repair_id, AuditContext.from_payload(p["context"]))
        elif state is None:
            break
        elif ev.type == PROPOSED:
            state.rounds.append(
                Round(
                    RepairPatch.model_validate(p["patch"]),
                    p["patched_yaml"],
                    ScopeCheck.model_validate(p["scope"]),
                )
            )
        elif ev.type == REVIEWED:
            review = ReviewVerdict.model_validate(p["review"])
            for r in state.rounds:
                if r.patch.patch_id == review.patch_id:
                    r.review = review
        elif ev.type == RETESTED:
            state.retest = RetestResult.model_validate(p["retest"])
        elif ev.type == DECIDED:
            state.decision = RepairDecision.model_validate(p["decision"])
        elif ev.type == PR_PROPOSED:
            state.pr = PRProposal.model_validate(p["proposal"])
    if state is None:
        known = [s.removeprefix("repair-") for s in store.list_streams("repair-")][:10]
        raise NotFoundError(
            f"no repair {repair_id!r} in the store", hint=f"known: {', '.join(known) or 'none'}"
        )
    return state
