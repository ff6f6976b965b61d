"""Label invariants and the source-type baseline every built dataset is checked against.

If labels collapsed to source type (all memory Invalid, all lookups Valid), the audit would be
trivial; the build therefore reports how well a classifier that sees only a factor's source type
predicts its label, beside the majority-label baseline.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from schemas.attribution import AttributionTask, Authority, Relation


def invariant_violations(tasks: list[AttributionTask]) -> list[str]:
    """Every broken invariant, as one line each; an empty list means the dataset passes."""
    problems: list[str] = []
    by_source: dict[str, set[str]] = defaultdict(set)
    auth_competitor = unauth_supporter = False
    copied = 0
    for task in tasks:
        vectors = {tuple(t.labels()) for t in task.targets}
        copied += len(vectors) == 1
        for target in task.targets:
            if not any(j.label.value == "valid" for j in target.judgments):
                problems.append(f"{task.task_id}/{target.target_id}: no Valid factor")
            for j, factor in zip(target.judgments, task.factors, strict=True):
                by_source[factor.source_type.value].add(j.label.value)
                if j.label.value == "invalid" and not j.competing_value:
                    problems.append(
                        f"{task.task_id}/{target.target_id}/{j.factor_id}: Invalid without competitor"
                    )
                auth_competitor |= j.authority is Authority.authorized and j.relation is Relation.competes
                unauth_supporter |= j.authority is Authority.unauthorized and j.relation is Relation.supports
    if copied:
        problems.append(f"{copied} task(s) have identical labels on all three targets (copied labels)")
    if not auth_competitor:
        problems.append("no authorized competitor occurs")
    if not unauth_supporter:
        problems.append("no unauthorized supporter occurs")
    for source, labels in sorted(by_source.items()):
        if len(labels) < 2:
            problems.append(f"source type {source} carries a single label ({next(iter(labels))})")
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        problems.append("duplicate task ids")
    return problems


@dataclass(frozen=True)
class LabelReport:
    """Label counts and how predictable labels are from source type alone."""

    n_tasks: int
    n_targets: int
    counts: dict[str, int]
    majority_accuracy: float
    source_type_accuracy: float
    source_type_rule: dict[str, str]


def label_report(tasks: list[AttributionTask]) -> LabelReport:
    """In-sample accuracy of the best source-type-only classifier (an upper bound for that family)."""
    pairs = [
        (f.source_type.value, j.label.value)
        for task in tasks
        for target in task.targets
        for f, j in zip(task.factors, target.judgments, strict=True)
    ]
    counts = Counter(label for _, label in pairs)
    per_source: dict[str, Counter[str]] = defaultdict(Counter)
    for source, label in pairs:
        per_source[source][label] += 1
    rule = {s: c.most_common(1)[0][0] for s, c in sorted(per_source.items())}
    hits = sum(per_source[s][rule[s]] for s in rule)
    return LabelReport(
        n_tasks=len(tasks),
        n_targets=sum(len(t.targets) for t in tasks),
        counts=dict(counts),
        majority_accuracy=counts.most_common(1)[0][1] / len(pairs),
        source_type_accuracy=hits / len(pairs),
        source_type_rule=rule,
    )
