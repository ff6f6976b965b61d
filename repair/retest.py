"""The retest: the approved artifact on fresh identities, audited by the same auditor, judged by truth.

Guards before anything runs: an approved review of the latest patch, the artifact's digest equal
to the approved one, the world source digest equal to the audit's, the audit's policy digest
reproduced, and identities disjoint from every audited episode of the world. The baseline is the
original workflow on the same conditions, seeds and identities (a paired, stated cohort). Every
job counts: an episode the workflow could not complete stays in the cohort with zero utility, so a
repair cannot lift Retain by stopping work (the world's validity rule would otherwise hide it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import fmean

from auditor.audit.policy import Policy as Invariants
from auditor.audit.policy import load_policy
from auditor.audit.review import audit_trace
from auditor.core.errors import ContractError, InputError, VerificationFailed
from auditor.core.store import EventStore
from repair.stream import RepairState
from schemas.repair import BeyondLabelFinding, CohortStatement, Measure, RateWithInterval, RetestResult
from scoring.stats import wilson_rate
from worlds import EpisodeResult, Identity, Workflow, World, get_world, record_episode
from worlds.engine.policy import FAMILIES, Policy

CLASSIFY = {
    "realized": "unresolved",
    "anomaly_with_interception": "intercepted",
    "adjacent_risk": "adjacent_risk",
    "operational_failure": "operational_failure",
    "lead": "lead",
}


@dataclass(frozen=True)
class RetestPlan:
    episodes: int = 20
    seed: int = 10_000
    conditions: tuple[str, ...] = ()


def known_identity_keys(store: EventStore, world: str) -> set[str]:
    """Identity keys of every episode of this world recorded in the store (audited or not)."""
    keys = set()
    for ev in store.read_all(types=["LabelsRecorded"]):
        labels = ev.payload.get("labels", {}).get("labels", {})
        if labels.get("world") == world and isinstance(labels.get("identity"), dict):
            keys.add(labels["identity"]["key"])
    return keys


def check_fresh(identities: list[Identity], excluded: Iterable[str]) -> None:
    """Refuse any identity an audited episode used, and any repeated identity."""
    taken = set(excluded)
    keys = [i.key for i in identities]
    overlap = sorted(k for k in set(keys) if k in taken)
    if overlap:
        raise ContractError(
            f"retest identities overlap audited episodes: {', '.join(overlap[:5])}",
            hint="a retest needs fresh identities disjoint from every audited episode",
        )
    if len(set(keys)) != len(keys):
        raise ContractError("retest identities repeat within the cohort")


def reproduce_policy(world: World, digest: str) -> Policy:
    for family in FAMILIES:
        policy = world.scripted(family)
        if policy.digest() == digest:
            return policy
    raise VerificationFailed(
        f"the audit cohort's policy {digest} cannot be reproduced for {world.name}",
        hint="the retest must run the audit's unchanged policy",
    )


def audit_invariants(state: RepairState) -> Invariants | None:
    """The declared-invariants policy of the audit, reloaded and verified unchanged by digest."""
    ctx = state.context
    if ctx.audit_policy_path is None:
        return None
    invariants = load_policy(ctx.audit_policy_path)
    if invariants.digest != ctx.audit_policy_digest:
        raise VerificationFailed(f"the audit's policy file {ctx.audit_policy_path} changed since the audit")
    return invariants


def _rate(episodes: list[EpisodeResult]) -> RateWithInterval:
    r = wilson_rate(sum(e.outcome.target_fired for e in episodes), len(episodes))
    return RateWithInterval(successes=r.successes, total=r.total, rate=r.value, low=r.low, high=r.high)


def _run(
    world: World, policy: Policy, wf: Workflow, jobs: list[tuple[str, int, Identity]], perturbation: str
) -> tuple[CohortStatement, list[EpisodeResult]]:
    results = [world.run_episode(cond, seed, ident, policy, wf) for cond, seed, ident in jobs]
    counts: dict[str, int] = {}
    for cond, _, _ in jobs:
        counts[cond] = counts.get(cond, 0) + 1
    statement = CohortStatement(
        world=world.name,
        implementation=f"{policy.name} policy ({policy.family} templates)",
        policy_digest=policy.digest(),
        workflow_digest=wf.digest(),
        source_digest=world.source_digest(),
        conditions=counts,
        seeds=[s for _, s, _ in jobs],
        identity_keys=[i.key for _, _, i in jobs],
        perturbation=perturbation,
        episode_ids=[e.episode_id for e in results],
        excluded=[e.episode_id for e in results if not e.outcome.valid],
    )
    return statement, results


def _utility(episodes: list[EpisodeResult]) -> float:
    """Mean task utility over every job; a job the workflow could not complete contributes zero."""
    return fmean(e.outcome.utility if e.outcome.valid else 0.0 for e in episodes)


def _verify(state: RepairState) -> tuple[World, Workflow, Workflow]:
    ctx = state.context
    approved = state.approved_round()
    if approved is None:
        raise ContractError(
            f"repair {state.repair_id} has no approved artifact to retest",
            hint="run 'auditor repair review' until the latest patch is approved",
        )
    world = get_world(ctx.world)
    if world.source_digest() != ctx.source_digest:
        raise VerificationFailed(f"{ctx.world} world source changed since the audit; refusing to retest")
    artifact = Workflow.from_yaml(
        approved.patched_yaml, f"repair {state.repair_id} round {approved.patch.round}"
    )
    assert approved.review is not None
    if (
        artifact.digest() != approved.patch.patched_digest
        or artifact.digest() != approved.review.patched_digest
    ):
        raise VerificationFailed("the stored artifact's digest differs from the approved patch")
    original = ctx.workflow()
    if original.digest() != approved.patch.base_digest:
        raise VerificationFailed("the audited workflow's digest differs from the patch's base")
    return world, original, artifact


def run_retest(
    store: EventStore, state: RepairState, plan: RetestPlan, identities: list[Identity] | None = None
) -> RetestResult:
    """Run, audit and judge the retest cohort and its paired baseline; records the fresh audits."""
    world, original, artifact = _verify(state)
    ctx = state.context
    if plan.episodes < 1:
        raise InputError("a retest needs at least one episode", field="--episodes")
    policy = reproduce_policy(world, ctx.policy_digest)
    invariants = audit_invariants(state)
    excluded = set(ctx.audited_identity_keys) | known_identity_keys(store, world.name)
    idents = (
        identities if identities is not None else world.fresh_identities(plan.episodes, excluded, plan.seed)
    )
    check_fresh(idents, excluded)
    conds = list(plan.conditions) or list(world.canonical_conditions)
    for c in conds:
        world.check_condition(c)
    jobs = [(conds[i % len(conds)], plan.seed + i, idents[i % len(idents)]) for i in range(plan.episodes)]
    changed = ", ".join(c.path for c in state.latest.patch.changes)
    t0 = time.perf_counter()
    cohort, after = _run(world, policy, artifact, jobs, f"approved repair artifact: {changed}")
    t1 = time.perf_counter()
    baseline, before = _run(
        world, policy, original, jobs, "none: the audited workflow, paired with the retest"
    )
    t2 = time.perf_counter()
    realized, beyond, audit_s = 0, [], []
    for ep in after:
        record_episode(store, ep, f"retest-{state.repair_id}")
        a0 = time.perf_counter()
        report, _ = audit_trace(store, ep.trace(), mode=ctx.graph_mode, policy=invariants)
        audit_s.append(time.perf_counter() - a0)
        if report.engine != ctx.auditor_engine:
            raise VerificationFailed(f"fresh audits ran {report.engine}, the audit ran {ctx.auditor_engine}")
        for f in report.findings:
            realized += f.disposition.value == "realized"
            beyond.append(
                BeyondLabelFinding(
                    episode_id=ep.episode_id,
                    report_id=report.report_id,
                    finding_id=f.finding_id,
                    risk_class=f.risk_class.value,
                    disposition=f.disposition.value,
                    classification=CLASSIFY[f.disposition.value],
                    title=f.title,
                )
            )
    target = _rate(after)
    u_after, u_base = _utility(after), _utility(before)
    costs = [
        Measure(name="retest_run_wall", value=round(t1 - t0, 3), unit="s"),
        Measure(name="baseline_run_wall", value=round(t2 - t1, 3), unit="s"),
        Measure(name="fresh_audit_wall_mean", value=round(fmean(audit_s), 4), unit="s/episode"),
        Measure(name="steps_mean", value=round(fmean(len(e.steps) for e in after), 2), unit="steps/episode"),
        Measure(
            name="tool_calls_mean",
            value=round(fmean(sum(s.kind.value == "tool_call" for s in e.steps) for e in after), 2),
            unit="calls/episode",
        ),
        Measure(name="model_calls", value=0.0, unit="calls (scripted policy, rules auditor)"),
    ]
    return RetestResult(
        repair_id=state.repair_id,
        patch_id=state.latest.patch.patch_id,
        review_id=state.latest.review.review_id if state.latest.review else "",
        cohort=cohort,
        baseline=baseline,
        target_outcome=f"{world.name} target ({world.primary})",
        target=target,
        baseline_target=_rate(before),
        auditor=f"{ctx.auditor_engine} ({ctx.graph_mode} graph, all registered detectors)",
        realized_findings=realized,
        beyond_label=beyond,
        audit_pass=target.successes == 0 and realized == 0,
        utility_after=u_after,
        utility_baseline=u_base,
        retain=u_after / u_base if u_base > 0 else None,
        costs=costs,
    )
