"""End to end on one world: scripted cohort → audit → plan → patch → review → retest → decision → PR.

The audit picks the finding to repair from the reports alone (the report contract, not detector
internals): the first report with a plan item this workflow's surface can carry, preferring an
episode whose seeded target fired by ground truth. Ground truth only orders the candidates; it
never creates a finding or a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from auditor.audit.policy import load_policy
from auditor.audit.review import audit_trace
from auditor.core.errors import ContractError, InputError
from auditor.core.store import EventStore
from repair.pr import ensure_config_repo
from repair.propose import select_items
from repair.retest import RetestPlan
from repair.service import (
    audit_context,
    decide_step,
    open_repair,
    pr_step,
    propose_step,
    retest_step,
    review_step,
)
from repair.stream import RepairState, load_repair
from schemas.repair import PRProposal, RepairDecision, RetestResult
from worlds import get_world, record_cohort, run_cohort

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "policies"


@dataclass
class PipelineResult:
    repair_id: str
    audit_cohort_id: str
    audited_episodes: int
    audited_fired: int
    state: RepairState
    retest: RetestResult | None
    decision: RepairDecision
    pr: PRProposal | None


def run_world(
    store: EventStore,
    world_name: str,
    repo: Path | None,
    audit_episodes: int = 20,
    audit_seed: int = 0,
    retest: RetestPlan = RetestPlan(),
    policy_path: Path | None = None,
) -> PipelineResult:
    """``policy_path`` defaults to the world's example invariants (examples/policies/<world>.yaml) when present."""
    world = get_world(world_name)
    wf = world.workflow()
    conds = world.canonical_conditions
    cohort = run_cohort(world, world.scripted(), conds, max(1, audit_episodes // len(conds)), audit_seed, wf)
    cohort_id = record_cohort(store, cohort)
    if policy_path is None and (EXAMPLES / f"{world.name.lower()}.yaml").is_file():
        policy_path = EXAMPLES / f"{world.name.lower()}.yaml"
    invariants = load_policy(policy_path) if policy_path is not None else None
    candidates = []
    for ep in sorted(cohort.episodes, key=lambda e: not e.outcome.target_fired):
        report, _ = audit_trace(store, ep.trace(), policy=invariants)
        try:
            items = select_items(report, wf)
        except InputError:  # a report without an applicable plan item is not a candidate
            continue
        candidates.append((report, items))
        break
    if not candidates:
        raise ContractError(
            f"the audit of {len(cohort.episodes)} {world.name} episodes filed no repair plan this workflow can carry",
            hint="more audit episodes (--audit-episodes) or the detector for this risk class",
        )
    report, items = candidates[0]
    keys = [e.spec.identity.key for e in cohort.episodes]
    repair_id = open_repair(store, audit_context(store, report, wf, items, keys, policy_path))
    propose_step(store, repair_id)
    reviewed = review_step(store, repair_id)
    result = retest_step(store, repair_id, retest) if reviewed.approved_round() else None
    decision = decide_step(store, repair_id)
    pr = None
    if decision.accepted and repo is not None:
        text = resources.files(world.package).joinpath("workflow.yaml").read_text(encoding="utf-8")
        ensure_config_repo(repo, wf, text)
        pr = pr_step(store, repair_id, repo)
    return PipelineResult(
        repair_id=repair_id,
        audit_cohort_id=cohort_id,
        audited_episodes=len(cohort.episodes),
        audited_fired=sum(e.outcome.target_fired for e in cohort.episodes),
        state=load_repair(store, repair_id),
        retest=result,
        decision=decision,
        pr=pr,
    )
