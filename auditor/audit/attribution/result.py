"""What an attribution says: the responsible agent, the decisive step, and the ranked candidates
behind them, each with resolvable evidence units and a confidence.

Strategies produce scored step candidates (``Vote``); :func:`assemble` turns them into the public
:class:`Attribution`: step candidates ranked by score, agent candidates ranked by the summed score
of their steps, confidences normalised to sum to one within each ranking.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from auditor.audit.attribution.facts import agent_name
from schemas import EvidenceUnit, Trace
from schemas.failure import AgentCandidate, Attribution, StepCandidate

__all__ = ["AgentCandidate", "Attribution", "StepCandidate", "Vote", "assemble"]


@dataclass
class Vote:
    """A signal's support for one step, with the evidence that backs it."""

    step_id: str
    weight: float
    signal: str
    evidence: list[EvidenceUnit] = field(default_factory=list)


def assemble(
    trace: Trace,
    strategy: str,
    votes: list[Vote],
    *,
    model: str | None = None,
    used_ground_truth: bool = False,
    notes: list[str] | None = None,
    agent_bonus: dict[str, float] | None = None,
) -> Attribution:
    """Rank steps by summed vote weight (ties: earlier step first) and agents by their steps' sum
    plus any agent-level bonus (support for an agent that names no single step)."""
    by_step: dict[str, list[Vote]] = defaultdict(list)
    for v in votes:
        if v.weight > 0:
            by_step[v.step_id].append(v)
    pos = {s.step_id: s for s in trace.steps}
    scored = sorted(
        ((sum(v.weight for v in vs), pos[sid]) for sid, vs in by_step.items()),
        key=lambda x: (-x[0], x[1].index),
    )
    total = sum(score for score, _ in scored) or 1.0
    steps = [
        StepCandidate(
            step_id=s.step_id,
            index=s.index,
            agent=agent_name(s.actor),
            score=round(score, 6),
            confidence=round(score / total, 6),
            signals=[v.signal for v in by_step[s.step_id]],
            evidence=_dedupe(u for v in by_step[s.step_id] for u in v.evidence),
        )
        for score, s in scored
    ]
    agent_scores: dict[str, float] = defaultdict(float, agent_bonus or {})
    agent_steps: dict[str, list[StepCandidate]] = defaultdict(list)
    for c in steps:
        agent_scores[c.agent] += c.score
        agent_steps[c.agent].append(c)
    first_seen = {agent_name(s.actor): s.index for s in reversed(trace.steps)}
    ranked = sorted(agent_scores.items(), key=lambda x: (-x[1], first_seen.get(x[0], 0)))
    a_total = sum(v for _, v in ranked) or 1.0
    agents = [
        AgentCandidate(
            agent=name,
            score=round(score, 6),
            confidence=round(score / a_total, 6),
            steps=[c.step_id for c in agent_steps[name]],
            evidence=_dedupe(u for c in agent_steps[name] for u in c.evidence),
        )
        for name, score in ranked
        if score > 0
    ]
    top = steps[0] if steps else None
    return Attribution(
        trace_id=trace.header.trace_id,
        strategy=strategy,
        model=model,
        agent=agents[0].agent if agents else None,
        step_id=top.step_id if top else None,
        step_index=top.index if top else None,
        confidence=top.confidence if top else None,
        agents=agents,
        steps=steps,
        used_ground_truth=used_ground_truth,
        notes=list(notes or []),
    )


def _dedupe(units: object) -> list[EvidenceUnit]:
    seen: dict[tuple[str, str, str], EvidenceUnit] = {}
    for u in units:  # type: ignore[attr-defined]
        seen.setdefault((u.step_id, u.edge_ref, u.quote), u)
    return list(seen.values())


# The review's attribution states how likely its decisive step is right. The top step's share of
# the votes alone overstates it (a lone candidate has share 1.0, yet the labelled step is among
# the voted steps in only half of Who&When's failures). The chance differs by the run's form: a
# coordinated run (one agent directs the others; long, its decisive step one of many) is placed
# right less often than a group chat (a few turns, a decisive claim or act early on). Fitted on
# half A of Who&When's cases (benchmarks/outcome_eval.py --whowhen --split-by task): ECE 0.044 /
# 0.057 there, 0.077 / 0.077 on half B (group chats of the algorithm-generated subset /
# coordinated runs of the hand-crafted one); one mapping for both forms, (0.2, 0.25), left the
# group chats at 0.116 / 0.131, under-confident once the first unsupported claim placed half of
# them right. A single agent's run (no Who&When labels to fit on) keeps the one mapping.
CALIBRATION = {"coordinated": (0.2, 0.25), "group chat": (0.29, 0.25), "single agent": (0.2, 0.25)}


def calibrated(attribution: Attribution, form: str) -> Attribution:
    """The attribution with its confidence mapped from the top step's vote share to the measured
    chance, for a run of this ``form`` (a ``CALIBRATION`` key), that the decisive step is right;
    the candidates keep their shares."""
    if attribution.confidence is None:
        return attribution
    base, slope = CALIBRATION[form]
    return attribution.model_copy(update={"confidence": round(base + slope * attribution.confidence, 6)})
