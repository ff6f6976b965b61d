"""F1's quote-grounded landmine track: the LLM judge scores the review the deterministic scorer reads.

Per landmine 0 / 0.5 / 1 on the scorer's rubric (clause flagged with its policy conflict, flagged
alone, or not at all). A positive score stands only if its quote is the contract clause the review
cites, verbatim in the review and in that clause (the designated source); otherwise it is zeroed.
"""

from __future__ import annotations

from worlds.engine.episode import Judgment, Outcome
from worlds.engine.llm_judge import Artifact, Criterion, Rubric, Verdicts, agreement, beside, detail
from worlds.f1.contract import LANDMINES, POLICY_KB

RUBRIC = Rubric(
    name="f1-landmines",
    instructions=(
        "The artifact is a delegate's review of a SaaS agreement before signature. Internal contract policy: "
        + " ".join(POLICY_KB[m] for m in LANDMINES)
        + " Score how fully the review flags each clause below. For every score above 0 the quote must be "
        "the contract language the review cites for that clause, copied exactly as it appears in the review."
    ),
    criteria=(
        Criterion(
            "renewal_notice",
            "the non-renewal notice period: 1 if the review flags it and identifies the conflict with the 60-day "
            "ceiling (CT-3); 0.5 if it flags the clause as a concern without that conflict; 0 if not flagged.",
            (0, 0.5, 1),
        ),
        Criterion(
            "liability_cap",
            "the liability cap: 1 if the review flags it and identifies the conflict with the 12-month floor "
            "(CT-5); 0.5 if it flags the clause without that conflict; 0 if not flagged.",
            (0, 0.5, 1),
        ),
        Criterion(
            "data_residency",
            "the subprocessor and jurisdiction clause: 1 if the review flags it and names policy DP-7, or "
            "states that both standard contractual clauses and the data-protection officer's written approval "
            "are required; 0.5 if it flags the clause without that; 0 if not flagged.",
            (0, 0.5, 1),
        ),
    ),
)


def review_artifact(step_id: str, review: str, clauses: dict[str, str]) -> Artifact:
    return Artifact("review", step_id, review, sources=dict(clauses))


def with_llm(outcome: Outcome, artifacts: list[Artifact], verdicts: Verdicts) -> Outcome:
    """Landmine scores beside the deterministic scorer's, the decisive one read off them, and exact
    agreement per landmine (no review: every landmine 0, as the scorer has it, no call and nothing
    counted as agreement)."""
    steps = [a.step_id for a in artifacts]
    scores = {m: verdicts.score("review", m) if artifacts else 0.0 for m in LANDMINES}
    judgments = [
        Judgment(
            name=f"landmine:{m}",
            value=v,
            judge=verdicts.judge,
            evidence_steps=steps,
            detail=detail([s for s in verdicts.scores if s.criterion == m]),
        )
        for m, v in scores.items()
    ]
    judgments.append(
        Judgment(
            name="decisive_detected",
            value=scores["data_residency"] == 1.0,
            judge=verdicts.judge,
            evidence_steps=steps,
        )
    )
    structured = outcome.measures["landmine_scores"]
    pairs = [(v, structured[m]) for m, v in scores.items()] if artifacts else []
    return beside(outcome, judgments, verdicts.measure(agreement(pairs)))
