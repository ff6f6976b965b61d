"""The ``counterfactual`` strategy: a local causal LM scores how strongly each step supports the
answer the run delivered (and, with the correct answer given, how strongly it pushes away from
it), by leave-one-out over step groups with teacher forcing (``scoring.attribution_scores``).

The steps before the delivered answer become factors (grouped when there are more than
``MAX_GROUPS``; the strongest group is then split into its steps). A step's importance is the drop
in the delivered answer's per-token log-probability when it is removed, plus (with the correct
answer) the rise in the correct answer's. Pairwise interactions of the strongest groups are
reported in the notes. Default model: the local SmolLM2 (any transformers directory by path).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from auditor.audit.attribution.citations import Citer
from auditor.audit.attribution.facts import TraceFacts
from auditor.audit.attribution.result import Attribution, Vote, assemble
from schemas import Trace, TraceStep

if TYPE_CHECKING:
    from scoring.attribution_scores import GroupGame

STEP_CHARS = 360
TASK_CHARS = 600
TARGET_CHARS = 160
_SPACE = re.compile(r"\s+")


def _flat(text: str, limit: int) -> str:
    return _SPACE.sub(" ", text).strip()[:limit].rstrip()


def _line(step: TraceStep) -> str:
    return f"[{step.index}] {step.actor}: {_flat(step.content, STEP_CHARS)}\n"


class CounterfactualStrategy:
    name = "counterfactual"
    needs_model = True

    def attribute(
        self, trace: Trace, *, ground_truth: str | None = None, model: str | None = None
    ) -> Attribution:
        from auditor.core.local_model import SMOLLM2, shared_model
        from scoring.attribution_scores import group_spans, score_groups

        loaded = shared_model(model or SMOLLM2)
        facts = TraceFacts(trace)
        final = facts.final_step
        context = trace.steps[: final.index] if final is not None and final.index > 0 else trace.steps[:-1]
        answer = facts.final_answer or (_flat(final.content, TARGET_CHARS) if final is not None else "")
        notes = list(facts.notes)
        if not context or not answer:
            notes.append("counterfactual: no context before the delivered answer, or no answer to score")
            return assemble(trace, self.name, [], model=loaded.name, notes=notes)
        scaffold = f"Task: {_flat(trace.header.task or '', TASK_CHARS)}\nConversation:\n"
        query = "Final answer:"
        targets = [" " + _flat(answer, TARGET_CHARS)]
        if ground_truth:
            targets.append(" " + _flat(ground_truth, TARGET_CHARS))
        lines = [_line(s) for s in context]
        spans = group_spans(len(lines))
        games = score_groups(
            loaded, scaffold, ["".join(lines[i] for i in sp) for sp in spans], query, targets
        )
        group_imp = [_importance(games, g) for g in range(len(spans))]
        per_step = {i: group_imp[g] for g, sp in enumerate(spans) for i in sp}
        top = max(range(len(spans)), key=lambda g: group_imp[g])
        if len(spans[top]) > 1:  # split the strongest group into its steps, the rest held as context
            sp = spans[top]
            before, after = "".join(lines[: sp.start]), "".join(lines[sp.stop :])
            factors = [*([before] if before else []), *[lines[i] for i in sp], *([after] if after else [])]
            inner = score_groups(loaded, scaffold, factors, query, targets, pairs=False)
            offset = 1 if before else 0
            for k, i in enumerate(sp):
                per_step[i] = group_imp[top] + _importance(inner, offset + k)
        for (g, h), value in games[0].pairs.items():
            notes.append(f"interaction of steps {_label(spans[g])} and {_label(spans[h])}: {value:+.3f}")
        cite = Citer(trace)
        votes = [
            Vote(
                context[i].step_id,
                w,
                f"leave-one-out support {per_step[i]:+.3f}",
                cite.cite(context[i].step_id),
            )
            for i, w in _weights(per_step).items()
        ]
        return assemble(
            trace, self.name, votes, model=loaded.name, used_ground_truth=bool(ground_truth), notes=notes
        )


def _importance(games: list[GroupGame], g: int) -> float:
    """Support for the delivered answer, plus pressure away from the correct one when it is given."""
    value = games[0].loo[g]
    if len(games) > 1:
        value -= games[1].loo[g]
    return value


def _weights(per_step: dict[int, float]) -> dict[int, float]:
    """Softmax of the importances (temperature: their spread), so every step keeps some weight."""
    values = list(per_step.values())
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
    top = max(values)
    return {i: math.exp((v - top) / spread) for i, v in per_step.items()}


def _label(span: range) -> str:
    return str(span.start) if len(span) == 1 else f"{span.start}-{span.stop - 1}"
