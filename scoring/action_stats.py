"""Paired statistics of generated actions: discordance, transitions, competitors, flips, rescue.

Generations pair within target: the trusted and untrusted variants of one relation, the two
authority-flip contexts, a rescue base and its treatment. Every rate carries its denominator (a
Wilson ``Rate``); a cohort with no members has no rate (None), never a zero. Discordance compares
the canonical target values (an absent value is a value, so absent on both sides agrees);
transitions compare correctness. Rows are pooled per cell: all targets, tool targets, slot targets.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from scoring.action_contexts import BASE, CONDITIONS, DROP, DROP_U, FLIP_T, FLIP_U
from scoring.runs import GeneratedAction
from scoring.stats import (
    DEFAULT_RESAMPLES,
    BootstrapInterval,
    McNemarResult,
    Rate,
    cluster_bootstrap_difference,
    mcnemar_exact,
    wilson_rate,
)

CELLS = ("all", "tool", "slot")
RELATIONS = {"support": ("T_S", "U_S"), "competition": ("T_C", "U_C")}
COMPETING = ("T_C", "U_C", FLIP_U, FLIP_T)
RESCUE_ARMS = (
    ("factorial support, trusted", BASE, "T_S"),
    ("factorial support, untrusted", BASE, "U_S"),
    ("support arm, trusted restore", DROP, BASE),
    ("support arm, untrusted note", DROP, DROP_U),
)

Pairs = list[tuple[GeneratedAction, GeneratedAction]]


def rate(successes: int, total: int) -> Rate | None:
    return wilson_rate(successes, total) if total else None


def by_target(rows: Iterable[GeneratedAction]) -> dict[str, dict[str, GeneratedAction]]:
    """Each target's generations keyed by condition (targets in first-seen order)."""
    out: dict[str, dict[str, GeneratedAction]] = defaultdict(dict)
    for row in rows:
        out[row.target_key][row.condition] = row
    return dict(out)


def in_cell(row: GeneratedAction, cell: str) -> bool:
    return cell == "all" or row.kind == cell


def pairs(targets: dict[str, dict[str, GeneratedAction]], first: str, second: str, cell: str) -> Pairs:
    """(first, second) generations of every target in the cell that has both."""
    return [
        (g[first], g[second])
        for g in targets.values()
        if first in g and second in g and in_cell(g[first], cell)
    ]


def _mcnemar(p: Pairs) -> McNemarResult | None:
    return mcnemar_exact([a.correct for a, _ in p], [b.correct for _, b in p]) if p else None


@dataclass(frozen=True)
class ConditionAccuracy:
    """Correct and malformed generations of one condition, over its generations in the cell."""

    condition: str
    cell: str
    n: int
    correct: Rate | None
    malformed: Rate | None


def accuracy(targets: dict[str, dict[str, GeneratedAction]]) -> list[ConditionAccuracy]:
    out = []
    for condition in CONDITIONS:
        for cell in CELLS:
            rows = [g[condition] for g in targets.values() if condition in g and in_cell(g[condition], cell)]
            n = len(rows)
            out.append(
                ConditionAccuracy(
                    condition,
                    cell,
                    n,
                    rate(sum(r.correct for r in rows), n),
                    rate(sum(not r.parsed for r in rows), n),
                )
            )
    return out


@dataclass(frozen=True)
class PairedChange:
    """Trusted vs untrusted within one relation, over the targets generated in both.

    ``correct_to_wrong``: correct under T, wrong under U (harmful demotion); ``wrong_to_correct``:
    the reverse (corrective). McNemar tests T and U correctness on the same targets.
    """

    relation: str
    cell: str
    n_pairs: int
    discordant: Rate | None
    correct_to_wrong: Rate | None
    wrong_to_correct: Rate | None
    mcnemar: McNemarResult | None


def paired_changes(targets: dict[str, dict[str, GeneratedAction]]) -> list[PairedChange]:
    out = []
    for relation, (t, u) in RELATIONS.items():
        for cell in CELLS:
            p = pairs(targets, t, u, cell)
            n = len(p)
            out.append(
                PairedChange(
                    relation,
                    cell,
                    n,
                    rate(sum(a.value != b.value for a, b in p), n),
                    rate(sum(a.correct and not b.correct for a, b in p), n),
                    rate(sum(b.correct and not a.correct for a, b in p), n),
                    _mcnemar(p),
                )
            )
    return out


@dataclass(frozen=True)
class DiscordanceContrast:
    """Competition minus support discordance over targets with both pairs; interval by source task."""

    cell: str
    n_targets: int
    competition: Rate | None
    support: Rate | None
    difference: float | None
    interval: BootstrapInterval | None
    mcnemar: McNemarResult | None


def discordance_contrast(
    targets: dict[str, dict[str, GeneratedAction]], n_resamples: int = DEFAULT_RESAMPLES
) -> list[DiscordanceContrast]:
    out = []
    needed = (*RELATIONS["support"], *RELATIONS["competition"])
    for cell in CELLS:
        rows = [g for g in targets.values() if all(c in g for c in needed) and in_cell(g["T_S"], cell)]
        comp = [g["T_C"].value != g["U_C"].value for g in rows]
        supp = [g["T_S"].value != g["U_S"].value for g in rows]
        tasks = [g["T_S"].task_id for g in rows]
        n = len(rows)
        interval = None
        if len(set(tasks)) >= 2:
            interval = cluster_bootstrap_difference(comp, tasks, supp, tasks, n_resamples=n_resamples)
        out.append(
            DiscordanceContrast(
                cell,
                n,
                rate(sum(comp), n),
                rate(sum(supp), n),
                (sum(comp) - sum(supp)) / n if n else None,
                interval,
                mcnemar_exact(comp, supp) if n else None,
            )
        )
    return out


@dataclass(frozen=True)
class CompetitorMatch:
    """Incorrect generations in a context presenting a competitor: how many produced that competitor."""

    condition: str
    cell: str
    n_incorrect: int
    matched: Rate | None


def competitor_matches(targets: dict[str, dict[str, GeneratedAction]]) -> list[CompetitorMatch]:
    out = []
    for condition in COMPETING:
        for cell in CELLS:
            wrong = [
                g[condition]
                for g in targets.values()
                if condition in g and in_cell(g[condition], cell) and not g[condition].correct
            ]
            out.append(
                CompetitorMatch(
                    condition,
                    cell,
                    len(wrong),
                    rate(sum(bool(r.competitor_match) for r in wrong), len(wrong)),
                )
            )
    return out


@dataclass(frozen=True)
class AuthorityFlip:
    """The original Invalid factor (U) against its trusted rewrite (T), over targets with both.

    Misses and U→T switches (correct under U, wrong under T) are over all those targets; T
    competitor matches are over the T misses, the only generations that can match.
    """

    cell: str
    n_targets: int
    u_miss: Rate | None
    t_miss: Rate | None
    u_to_t_switch: Rate | None
    t_competitor: Rate | None
    mcnemar: McNemarResult | None


def authority_flips(targets: dict[str, dict[str, GeneratedAction]]) -> list[AuthorityFlip]:
    out = []
    for cell in CELLS:
        p = pairs(targets, FLIP_U, FLIP_T, cell)
        n = len(p)
        t_misses = [b for _, b in p if not b.correct]
        out.append(
            AuthorityFlip(
                cell,
                n,
                rate(sum(not a.correct for a, _ in p), n),
                rate(len(t_misses), n),
                rate(sum(a.correct and not b.correct for a, b in p), n),
                rate(sum(bool(b.competitor_match) for b in t_misses), len(t_misses)),
                _mcnemar(p),
            )
        )
    return out


@dataclass(frozen=True)
class Rescue:
    """Base errors that a treatment makes correct.

    ``rescued`` is over all targets of the arm (comparable with error rates); ``rescued_of_errors``
    is over the base errors, the §13.3 outcome.
    """

    arm: str
    base: str
    treatment: str
    cell: str
    n_targets: int
    base_errors: Rate | None
    rescued: Rate | None
    rescued_of_errors: Rate | None


def rescues(targets: dict[str, dict[str, GeneratedAction]]) -> list[Rescue]:
    out = []
    for arm, base, treatment in RESCUE_ARMS:
        for cell in CELLS:
            p = pairs(targets, base, treatment, cell)
            n = len(p)
            errors = sum(not a.correct for a, _ in p)
            saved = sum(not a.correct and b.correct for a, b in p)
            out.append(
                Rescue(arm, base, treatment, cell, n, rate(errors, n), rate(saved, n), rate(saved, errors))
            )
    return out


@dataclass(frozen=True)
class GenerationSummary:
    n_generations: int
    n_targets: int
    accuracy: list[ConditionAccuracy]
    changes: list[PairedChange]
    contrast: list[DiscordanceContrast]
    competitors: list[CompetitorMatch]
    flips: list[AuthorityFlip]
    rescues: list[Rescue]


def summarise_generations(
    rows: Iterable[GeneratedAction], n_resamples: int = DEFAULT_RESAMPLES
) -> GenerationSummary:
    """Every generation statistic of one run."""
    listed = list(rows)
    targets = by_target(listed)
    return GenerationSummary(
        len(listed),
        len(targets),
        accuracy(targets),
        paired_changes(targets),
        discordance_contrast(targets, n_resamples),
        competitor_matches(targets),
        authority_flips(targets),
        rescues(targets),
    )
