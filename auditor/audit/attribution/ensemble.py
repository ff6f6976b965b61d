"""The ``ensemble`` strategy: weighted reciprocal-rank fusion of other strategies' step rankings.

Each member ranks steps; a step earns ``weight / (K + rank)`` from every member that ranks it,
and agents then sum their steps' support as usual. The embedded rules lead (weight 1.0) and the
counterfactual model breaks their ties and reorders close calls (weight 0.5); the weights are set
by argument, not fitted to traces. Evidence and signals of each member travel with its votes.
"""

from __future__ import annotations

from auditor.audit.attribution.result import Attribution, Vote, assemble
from schemas import Trace

K = 1.0
DEFAULT_MEMBERS: dict[str, float] = {"rules": 1.0, "counterfactual": 0.5}


class EnsembleStrategy:
    name = "ensemble"
    needs_model = False

    def __init__(self, members: dict[str, float] | None = None) -> None:
        self.members = dict(members or DEFAULT_MEMBERS)

    def attribute(
        self, trace: Trace, *, ground_truth: str | None = None, model: str | None = None
    ) -> Attribution:
        from auditor.audit.attribution import load_strategy

        votes: list[Vote] = []
        notes: list[str] = []
        for name, weight in self.members.items():
            member = load_strategy(name)
            result = member.attribute(
                trace, ground_truth=ground_truth, model=model if member.needs_model else None
            )
            notes += [f"{name}: {n}" for n in result.notes]
            for rank, c in enumerate(result.steps):
                votes.append(
                    Vote(
                        c.step_id,
                        weight / (K + rank),
                        f"{name} rank {rank + 1}: " + "; ".join(c.signals),
                        c.evidence,
                    )
                )
        return assemble(
            trace, self.name, votes, model=model, used_ground_truth=bool(ground_truth), notes=notes
        )
