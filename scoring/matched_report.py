"""The one-run matched-intervention summary (Table-1 style): mean gains, drops and authority gaps.

Per target kind (all, tool, slot) it averages G_T, G_U, D_T, D_U, δ_S, δ_C and ΔΔ over the
run's targets (every one scored in all five contexts, so the denominator is the target count) and
gives δ_S, δ_C and ΔΔ a cluster-bootstrap 95% interval over source tasks (a task's targets move
together). The same-proposition control is a second table over the targets that have an Invalid
factor: mean removal gains R_U, R_T and the gap R_T − R_U with its interval; the §15.6 supporting
arm is a third, over every target: trusted-restore and untrusted-note gains and their gap. A cell with fewer than
two tasks has no interval, and an empty cell no means.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.generation_report import NA, Table
from scoring.interventions import EFFECTS, co_present, matched_effects, same_proposition, support_arm
from scoring.runs import MatchedTarget
from scoring.stats import BootstrapInterval, cluster_bootstrap_mean

KIND_CELLS = {"all": None, "tool": "tool", "slot": "slot"}
GAPS = ("delta_S", "delta_C", "delta_delta")
CONTROL_EFFECTS = ("R_U", "R_T", "gap")
SUPPORT_EFFECTS = ("trusted", "untrusted", "gap")
COPRESENT_EFFECTS = ("dup_T", "dup_U", "gap", "delta_delta")
COLUMNS = ["cell", "targets", "tasks", "G_T", "G_U", "D_T", "D_U", "δ_S", "δ_C", "ΔΔ"]
CONTROL_COLUMNS = ["cell", "targets", "tasks", "R_U", "R_T", "R_T − R_U"]
COPRESENT_COLUMNS = ["cell", "targets", "tasks", "trusted duplicate", "untrusted duplicate", "gap", "ΔΔ"]
SUPPORT_COLUMNS = ["cell", "targets", "tasks", "trusted restore", "untrusted note", "trusted − untrusted"]


@dataclass(frozen=True)
class MatchedCell:
    """One row: a target kind's mean effects and the source-task intervals of the gaps."""

    cell: str
    n_targets: int
    n_tasks: int
    means: dict[str, float]
    intervals: dict[str, BootstrapInterval | None]


def _summarise(
    rows: list[MatchedTarget],
    effects: Callable[[MatchedTarget], Any],
    names: tuple[str, ...],
    gaps: tuple[str, ...],
    n_resamples: int,
    seed: int,
) -> list[MatchedCell]:
    """Per target kind: means of ``names`` and intervals of ``gaps`` over targets with effects."""
    out = []
    for cell, kind in KIND_CELLS.items():
        picked = [(r, e) for r in rows if kind is None or r.kind == kind if (e := effects(r)) is not None]
        tasks = [r.task_id for r, _ in picked]
        values = {n: [getattr(e, n) for _, e in picked] for n in names}
        means = {n: sum(v) / len(v) for n, v in values.items()} if picked else {}
        intervals = {
            g: cluster_bootstrap_mean(values[g], tasks, n_resamples=n_resamples, seed=seed)
            if len(set(tasks)) >= 2
            else None
            for g in gaps
        }
        out.append(MatchedCell(cell, len(picked), len(set(tasks)), means, intervals))
    return out


def summarise_matched(
    rows: list[MatchedTarget], score_field: str = "sum_logodds", n_resamples: int = 20_000, seed: int = 0
) -> list[MatchedCell]:
    """The factorial's cells, in ``KIND_CELLS`` order."""
    return _summarise(rows, lambda r: matched_effects(r.field(score_field)), EFFECTS, GAPS, n_resamples, seed)


def summarise_control(
    rows: list[MatchedTarget], score_field: str = "sum_logodds", n_resamples: int = 20_000, seed: int = 0
) -> list[MatchedCell]:
    """The same-proposition control's cells over targets with an Invalid factor."""
    return _summarise(
        rows, lambda r: same_proposition(r.field(score_field)), CONTROL_EFFECTS, ("gap",), n_resamples, seed
    )


def summarise_support(
    rows: list[MatchedTarget], score_field: str = "sum_logodds", n_resamples: int = 20_000, seed: int = 0
) -> list[MatchedCell]:
    """The §15.6 supporting arm's cells over every target."""
    return _summarise(
        rows, lambda r: support_arm(r.field(score_field)), SUPPORT_EFFECTS, ("gap",), n_resamples, seed
    )


def summarise_copresent(
    rows: list[MatchedTarget], score_field: str = "sum_logodds", n_resamples: int = 20_000, seed: int = 0
) -> list[MatchedCell]:
    """The exact-text co-present check's cells over targets scored with the duplicates."""
    return _summarise(
        rows,
        lambda r: co_present(r.field(score_field)),
        COPRESENT_EFFECTS,
        ("gap", "delta_delta"),
        n_resamples,
        seed,
    )


def _mean(cell: MatchedCell, effect: str) -> str:
    return f"{cell.means[effect]:+.3f}" if effect in cell.means else NA


def _gap(cell: MatchedCell, effect: str) -> str:
    interval = cell.intervals[effect]
    if interval is None:
        return _mean(cell, effect)
    return f"{_mean(cell, effect)} [{interval.low:+.3f}, {interval.high:+.3f}]"


def _rows(cells: list[MatchedCell], means: Sequence[str], gaps: Sequence[str]) -> list[list[str]]:
    """Each cell's counts, then its mean effects, then its gaps with their intervals."""
    return [
        [c.cell, str(c.n_targets), str(c.n_tasks), *(_mean(c, e) for e in means), *(_gap(c, g) for g in gaps)]
        for c in cells
    ]


def matched_table(cells: list[MatchedCell], dataset: str, score_field: str) -> Table:
    """The Table-1-style summary of one run (dataset × model)."""
    return Table(
        "matched",
        f"{dataset}: matched source interventions, mean {score_field} change "
        "(denominator: targets scored in base and all four cells; 95% CI: source-task cluster bootstrap)",
        COLUMNS,
        _rows(cells, ("G_T", "G_U", "D_T", "D_U"), GAPS),
    )


def control_table(cells: list[MatchedCell], dataset: str, score_field: str) -> Table:
    """The same-proposition control: removal gains of one competitor under each source marker."""
    return Table(
        "same_proposition",
        f"{dataset}: same-proposition control, removal gain of the first Invalid factor as written (U) "
        f"or trusted (T), {score_field} (denominator: targets with an Invalid factor; "
        "95% CI: source-task cluster bootstrap)",
        CONTROL_COLUMNS,
        _rows(cells, ("R_U", "R_T"), ("gap",)),
    )


def support_table(cells: list[MatchedCell], dataset: str, score_field: str) -> Table:
    """The §15.6 supporting arm: a dropped Valid factor restored trusted vs given as an untrusted note."""
    return Table(
        "support_arm",
        f"{dataset}: authority-by-relation supporting arm, gain over the base without its first Valid factor, "
        f"{score_field} (denominator: targets; 95% CI: source-task cluster bootstrap)",
        SUPPORT_COLUMNS,
        _rows(cells, ("trusted", "untrusted"), ("gap",)),
    )


def copresent_table(cells: list[MatchedCell], dataset: str, score_field: str) -> Table:
    """The exact-text co-present check: source marker on a duplicate, no evidence omitted."""
    return Table(
        "co_present",
        f"{dataset}: exact-text co-present check, gain from a trusted or untrusted duplicate of the first "
        f"Valid factor appended to the full base, {score_field}; ΔΔ = competition gap (D_T − D_U) − "
        "duplicate gap (denominator: targets scored with the duplicates; 95% CI: source-task cluster bootstrap)",
        COPRESENT_COLUMNS,
        _rows(cells, ("dup_T", "dup_U"), ("gap", "delta_delta")),
    )


def matched_tables(
    rows: list[MatchedTarget],
    dataset: str,
    score_field: str = "sum_logodds",
    n_resamples: int = 20_000,
    factorial: list[MatchedCell] | None = None,
) -> list[Table]:
    """Every table of one matched run: Table 1 (from ``factorial`` when the caller summarised it
    already), the same-proposition control, the supporting arm and the co-present check."""
    cells = summarise_matched(rows, score_field, n_resamples) if factorial is None else factorial
    return [
        matched_table(cells, dataset, score_field),
        control_table(summarise_control(rows, score_field, n_resamples), dataset, score_field),
        support_table(summarise_support(rows, score_field, n_resamples), dataset, score_field),
        copresent_table(summarise_copresent(rows, score_field, n_resamples), dataset, score_field),
    ]
