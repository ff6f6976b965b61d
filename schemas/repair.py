"""Repair contracts: the patch, the scope check, the review verdict, the retest, the decision, the PR.

A repair moves through these records in order; each is an event payload in the repair's stream.
The validators here are the contract's own guards: a review whose approval disagrees with its four
dimensions, or a decision that is not exactly the conjunction of the four conditions, cannot exist.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

REPAIR_CONTRACT_VERSION = "1"
RETAIN_THRESHOLD = 0.95


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PatchChange(_Frozen):
    """One leaf change of the workflow configuration, attributed to the plan item that asked for it."""

    path: str = Field(min_length=1, description="Dotted path in the workflow configuration.")
    before: Any = Field(description="Value in the original configuration (null when absent).")
    after: Any = Field(description="Value in the patched configuration.")
    plan_item_id: str = Field(min_length=1, description="The repair-plan item this change implements.")
    control: str = Field(min_length=1, description="The control (schemas.controls) the change builds.")
    rationale: str = Field(min_length=1)


class AppliedControl(_Frozen):
    control: str
    plan_item_id: str
    parameters: dict[str, Any] = Field(description="The control's parameters after defaults and revisions.")


class RepairPatch(_Frozen):
    """A proposed change to one workflow configuration, limited (if scope-clean) to its repair surface."""

    record: Literal["repair_patch"] = "repair_patch"
    patch_id: str
    world: str
    engine: str = Field(description="Repair engine that wrote it: 'rules/…' or 'agent/<model>'.")
    round: int = Field(ge=1, description="Proposal round (re-proposals after a rejected review).")
    base_digest: str = Field(description="Digest of the original workflow configuration.")
    patched_digest: str = Field(description="Digest of the patched configuration (the artifact).")
    controls: list[AppliedControl] = Field(min_length=1)
    changes: list[PatchChange] = Field(min_length=1)


class ScopeCheck(_Frozen):
    """ScopeOK: every changed path lies in the declared repair surface, none in a protected part."""

    record: Literal["scope_check"] = "scope_check"
    ok: bool
    surface: list[str]
    protected: list[str]
    violations: list[str] = Field(default_factory=list, description="Offending paths, named.")

    @model_validator(mode="after")
    def _ok_iff_clean(self) -> ScopeCheck:
        if self.ok == bool(self.violations):
            raise ValueError("scope ok must hold exactly when no path violates the surface")
        return self


class DimensionVerdict(StrEnum):
    passed = "pass"
    failed = "fail"


class ReviewIssue(_Frozen):
    """A failed check, stated so the Repair Agent can revise: which check, where, what it expects."""

    check: str
    path: str | None = None
    detail: str
    expected: Any = Field(default=None, description="What the reviewer requires at the path, if stated.")


class ReviewDimension(_Frozen):
    verdict: DimensionVerdict
    rationale: str = Field(min_length=1)
    checks: list[str] = Field(default_factory=list, description="The deterministic checks that ran.")
    issues: list[ReviewIssue] = Field(default_factory=list)


class ReviewVerdict(_Frozen):
    """The Repair Reviewer's judgement of one patch against the plan, on four dimensions."""

    record: Literal["review_verdict"] = "review_verdict"
    review_id: str
    patch_id: str
    patched_digest: str
    reviewer: str = Field(description="Reviewer engine; never the engine that wrote the patch.")
    round: int = Field(ge=1)
    risk_resolution: ReviewDimension
    plan_fidelity: ReviewDimension
    introduced_risk: ReviewDimension
    proportionality: ReviewDimension
    approved: bool

    def dimensions(self) -> dict[str, ReviewDimension]:
        return {
            "risk_resolution": self.risk_resolution,
            "plan_fidelity": self.plan_fidelity,
            "introduced_risk": self.introduced_risk,
            "proportionality": self.proportionality,
        }

    @model_validator(mode="after")
    def _approval_agrees(self) -> ReviewVerdict:
        all_pass = all(d.verdict is DimensionVerdict.passed for d in self.dimensions().values())
        if self.approved != all_pass:
            failing = [n for n, d in self.dimensions().items() if d.verdict is DimensionVerdict.failed]
            raise ValueError(
                f"review approval {self.approved} disagrees with its dimensions (failing: {failing or 'none'})"
            )
        return self


class RateWithInterval(_Frozen):
    successes: int = Field(ge=0)
    total: int = Field(ge=1)
    rate: float
    low: float
    high: float


class CohortStatement(_Frozen):
    """A cohort stated in full: who ran, on what, with which seeds, identities and configuration."""

    world: str
    implementation: str = Field(description="The one fixed policy or model, by name.")
    policy_digest: str
    workflow_digest: str
    source_digest: str
    conditions: dict[str, int] = Field(description="Condition → episodes run under it.")
    seeds: list[int]
    identity_keys: list[str]
    perturbation: str = Field(description="Configuration change relative to the audited workflow.")
    episode_ids: list[str]
    excluded: list[str] = Field(
        default_factory=list, description="Episodes that did not complete (kept, with zero utility), by id."
    )


class BeyondLabelFinding(_Frozen):
    """A fresh-audit finding beyond the targeted label, kept and classified by its disposition."""

    episode_id: str
    report_id: str
    finding_id: str
    risk_class: str
    disposition: str
    classification: Literal["unresolved", "intercepted", "adjacent_risk", "operational_failure", "lead"]
    title: str


class Measure(_Frozen):
    name: str
    value: float
    unit: str


class RetestResult(_Frozen):
    record: Literal["retest_result"] = "retest_result"
    repair_id: str
    patch_id: str
    review_id: str
    cohort: CohortStatement
    baseline: CohortStatement
    target_outcome: str = Field(description="The world's targeted outcome, decided by ground truth.")
    target: RateWithInterval
    baseline_target: RateWithInterval
    auditor: str = Field(description="Engine and detector set of the fresh audits (same as the audit).")
    realized_findings: int = Field(ge=0, description="Realized findings in fresh audits (unresolved).")
    beyond_label: list[BeyondLabelFinding] = Field(default_factory=list)
    audit_pass: bool
    utility_after: float = Field(ge=0.0)
    utility_baseline: float = Field(ge=0.0)
    retain: float | None = Field(
        description="utility_after / utility_baseline; null without a positive baseline."
    )
    costs: list[Measure] = Field(default_factory=list, description="Costs and latencies in their own units.")

    @model_validator(mode="after")
    def _audit_pass_consistent(self) -> RetestResult:
        expected = self.target.successes == 0 and self.realized_findings == 0
        if self.audit_pass != expected:
            raise ValueError(
                "audit_pass must hold exactly when the target is absent and nothing realized is left"
            )
        if (self.retain is None) != (self.utility_baseline <= 0):
            raise ValueError("retain exists exactly when the baseline utility is positive")
        return self


class RepairDecision(_Frozen):
    """Acceptance is exactly all four conditions; nothing else can accept or reject a repair."""

    record: Literal["repair_decision"] = "repair_decision"
    repair_id: str
    scope_ok: bool
    review_ok: bool
    audit_pass: bool
    retain_ok: bool
    retain: float | None
    accepted: bool
    reasons: list[str] = Field(default_factory=list, description="Each failed condition, in words.")

    @model_validator(mode="after")
    def _exactly_all_four(self) -> RepairDecision:
        if self.accepted != (self.scope_ok and self.review_ok and self.audit_pass and self.retain_ok):
            raise ValueError("a repair is accepted exactly when all four conditions hold")
        if self.retain_ok != (self.retain is not None and self.retain >= RETAIN_THRESHOLD):
            raise ValueError(f"retain_ok must mean retain ≥ {RETAIN_THRESHOLD}")
        return self


class PRProposal(_Frozen):
    """An accepted repair as a branch and one commit in a workflow-config repository; never merged."""

    record: Literal["pr_proposal"] = "pr_proposal"
    repair_id: str
    repo: str
    base_branch: str
    base_commit: str
    branch: str
    commit: str
    file: str = Field(description="Workflow file the commit changes, relative to the repository.")
    title: str
    description: str = Field(description="Markdown PR description.")
    merged: Literal[False] = False
