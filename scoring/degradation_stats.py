"""Valid-evidence degradation statistics (§2.3, §4.4): c_F, c_M, c_C, discordance, retained-invalid.

A row is one target and one of its Valid factors x, with the target's ``full`` generation and its
``mixed:<x>`` and ``clean:<x>`` generations; a row lacking any of the three is left out. The
primary endpoint is mixed–clean target discordance (canonical values differ; an absent value is a
value), tested on correctness by exact McNemar. The retained-invalid pattern is c_F=1, c_M=0,
c_C=1: an intervention pattern, not proof that one retained factor caused the error. Every rate is
a Wilson ``Rate`` over the rows of its cell; an empty cell has None, never a zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scoring.action_contexts import CLEAN, FULL, MIXED, degradation_condition
from scoring.action_stats import CELLS, by_target, in_cell, rate
from scoring.runs import GeneratedAction
from scoring.stats import McNemarResult, Rate, mcnemar_exact


@dataclass(frozen=True)
class DegradationRow:
    """One target-valid row: the three generations of a target around one Valid factor."""

    factor_id: str
    full: GeneratedAction
    mixed: GeneratedAction
    clean: GeneratedAction

    @property
    def retained_invalid(self) -> bool:
        return self.full.correct and not self.mixed.correct and self.clean.correct


def degradation_rows(rows: Iterable[GeneratedAction]) -> list[DegradationRow]:
    """Every complete (full, mixed, clean) triple, targets in first-seen order."""
    out = []
    for generations in by_target(rows).values():
        full = generations.get(FULL)
        if full is None:
            continue
        prefix = f"{MIXED}:"
        for condition, mixed in generations.items():
            if not condition.startswith(prefix):
                continue
            factor_id = condition[len(prefix) :]
            clean = generations.get(degradation_condition(CLEAN, factor_id))
            if clean is not None:
                out.append(DegradationRow(factor_id, full, mixed, clean))
    return out


@dataclass(frozen=True)
class DegradationCell:
    """The degradation endpoints of one cell, each over its ``n_rows`` target-valid rows.

    ``mcnemar`` tests mixed (A) against clean (B) correctness: b = mixed-only correct, c =
    clean-only correct.
    """

    cell: str
    n_rows: int
    n_targets: int
    c_full: Rate | None
    c_mixed: Rate | None
    c_clean: Rate | None
    discordant: Rate | None
    mcnemar: McNemarResult | None
    retained_invalid: Rate | None


def degradation_cells(rows: list[DegradationRow]) -> list[DegradationCell]:
    out = []
    for cell in CELLS:
        picked = [r for r in rows if in_cell(r.full, cell)]
        n = len(picked)
        out.append(
            DegradationCell(
                cell,
                n,
                len({r.full.target_key for r in picked}),
                rate(sum(r.full.correct for r in picked), n),
                rate(sum(r.mixed.correct for r in picked), n),
                rate(sum(r.clean.correct for r in picked), n),
                rate(sum(r.mixed.value != r.clean.value for r in picked), n),
                mcnemar_exact([r.mixed.correct for r in picked], [r.clean.correct for r in picked])
                if n
                else None,
                rate(sum(r.retained_invalid for r in picked), n),
            )
        )
    return out


@dataclass(frozen=True)
class DegradationSummary:
    n_generations: int
    n_rows: int
    cells: list[DegradationCell]
    retained: list[DegradationRow]


def summarise_degradation(rows: Iterable[GeneratedAction]) -> DegradationSummary:
    """Every degradation statistic of one run, with the retained-invalid rows for inspection."""
    listed = list(rows)
    triples = degradation_rows(listed)
    return DegradationSummary(
        len(listed), len(triples), degradation_cells(triples), [r for r in triples if r.retained_invalid]
    )
