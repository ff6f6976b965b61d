"""Cohorts: a grid of conditions × seeds (× identities) under one policy, with written rules.

Validity rule: an episode counts only when the world's outcome says the required workflow ran
(every required tool call and hand-off executed). First-success rule: where a job ran more than
once, the first valid attempt in attempt order is retained. Substitution rule: an implementation
that cannot run is replaced only by the substitute named in the plan; the scripted policy never
needs one. All three are recorded with the cohort.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from scoring.stats import wilson_rate
from worlds.engine.episode import EpisodeResult, Identity
from worlds.engine.policy import Policy
from worlds.engine.workflow import Workflow
from worlds.engine.world import World

VALIDITY_RULE = (
    "exclude episodes whose world outcome is not valid (required workflow and tool calls not executed)"
)
FIRST_SUCCESS_RULE = "per (condition, seed, identity) job keep the first valid attempt in attempt order"
SUBSTITUTION_RULE = (
    "an implementation that cannot run is replaced only by the substitute named in the plan; none used"
)


@dataclass
class Cohort:
    world: str
    policy: str
    policy_digest: str
    workflow_digest: str
    source_digest: str
    conditions: list[str]
    seeds: list[int]
    episodes: list[EpisodeResult] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    judge_model: str | None = None

    @property
    def cohort_id(self) -> str:
        blob = json.dumps(
            [
                self.world,
                self.policy_digest,
                self.workflow_digest,
                self.conditions,
                self.seeds,
                sorted(e.episode_id for e in self.episodes),
            ],
            sort_keys=True,
        )
        return f"{self.world.lower()}-cohort-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    def manifest(self) -> dict[str, Any]:
        return {
            "cohort_id": self.cohort_id,
            "world": self.world,
            "policy": self.policy,
            "policy_digest": self.policy_digest,
            "workflow_digest": self.workflow_digest,
            "source_digest": self.source_digest,
            "conditions": self.conditions,
            "seeds": self.seeds,
            "episode_ids": [e.episode_id for e in self.episodes],
            "excluded": self.excluded,
            "identity_keys": sorted({e.spec.identity.key for e in self.episodes}),
            "rules": {
                "validity": VALIDITY_RULE,
                "first_success": FIRST_SUCCESS_RULE,
                "substitution": SUBSTITUTION_RULE,
            },
            **({"llm_judge": f"llm:{self.judge_model}"} if self.judge_model else {}),
        }


def run_cohort(
    world: World,
    policy: Policy,
    conditions: Iterable[str],
    episodes: int,
    seed: int = 0,
    workflow: Workflow | None = None,
    identities: list[Identity] | None = None,
    exclude_identities: Iterable[str] = (),
    attempts: int = 1,
    progress: Callable[[int], None] | None = None,
    judge_model: str | None = None,
) -> Cohort:
    """Run ``episodes`` jobs per condition; job i uses seed+i and identity i in every condition (paired).
    ``judge_model`` adds the world's LLM judge beside its deterministic judges."""
    conds = list(conditions)
    for c in conds:
        world.check_condition(c)
    world.check_judge_model(judge_model)
    wf = workflow or world.workflow()
    idents = identities or world.fresh_identities(episodes, exclude=exclude_identities, seed=seed)
    seeds = [seed + i for i in range(episodes)]
    cohort = Cohort(
        world.name,
        policy.name,
        policy.digest(),
        wf.digest(),
        world.source_digest(),
        conds,
        seeds,
        judge_model=judge_model,
    )
    for cond in conds:
        for i, s in enumerate(seeds):
            kept = None
            for attempt in range(attempts):
                result = world.run_episode(
                    cond, s + attempt * 1_000_003, idents[i % len(idents)], policy, wf, judge_model
                )
                if result.outcome.valid:
                    kept = result
                    break
                cohort.excluded.append(result.episode_id)
            if kept is not None:
                cohort.episodes.append(kept)
            if progress:
                progress(1)
    return cohort


@dataclass(frozen=True)
class EndpointRow:
    condition: str
    endpoint: str
    successes: int
    total: int
    rate: float
    low: float
    high: float


def summarise(cohort: Cohort, endpoints: Iterable[str]) -> list[EndpointRow]:
    """Endpoint rates with Wilson 95% intervals per condition and pooled; unassessed episodes don't count."""
    rows: list[EndpointRow] = []
    groups = [(c, [e for e in cohort.episodes if e.spec.condition == c]) for c in cohort.conditions]
    if len(groups) > 1:
        groups.append(("pooled", list(cohort.episodes)))
    for cond, eps in groups:
        for name in endpoints:
            values = [e.outcome.endpoints.get(name) for e in eps]
            assessed = [v for v in values if v is not None]
            if not assessed:
                continue
            r = wilson_rate(sum(bool(v) for v in assessed), len(assessed))
            rows.append(EndpointRow(cond, name, r.successes, r.total, r.value, r.low, r.high))
    return rows


def mean_utility(episodes: list[EpisodeResult]) -> float | None:
    return fmean(e.outcome.utility for e in episodes) if episodes else None


@dataclass(frozen=True)
class JudgeAgreement:
    """The LLM judge against the deterministic one over a cohort."""

    judge: str
    agree: int
    items: int
    zeroed: int
    unparsed: int


def judge_agreement(episodes: list[EpisodeResult]) -> JudgeAgreement | None:
    """Pool the episodes' ``llm_judge`` measures; None when no LLM judge ran."""
    records = [e.outcome.measures["llm_judge"] for e in episodes if "llm_judge" in e.outcome.measures]
    if not records:
        return None
    return JudgeAgreement(
        judge=records[0]["judge"],
        agree=sum(r["agreement"]["agree"] for r in records),
        items=sum(r["agreement"]["items"] for r in records),
        zeroed=sum(r["ungrounded_zeroed"] for r in records),
        unparsed=sum(not r["parsed"] for r in records),
    )
