"""The robustness controls of a coalition-shaped run as report tables (seed §15.2–15.4, §15.7–15.9).

Two kinds, by what they need:

- computed from the run's stored subset scores (no model call): the content-type-matched null,
  the salience-, value-bearing- and role-matched controls (``scoring.nulls``,
  ``scoring.matching``) and the exact coarsenings (``scoring.coarsening``); they need the
  dataset's factor buckets, roles and relations, rebuilt from the run's configuration;
- a construction run's paired comparison with its original coalition run
  (``scoring.paired_controls``): the order-shuffle, placeholder and no-invalid runs were scored
  anew by ``auditor score run --experiment …``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.coarsening import coarsening_summary
from scoring.comparison import COMPARISON_COLUMNS, comparison_table_rows
from scoring.construction import CONSTRUCTION_EXPERIMENTS, tasks_of_run
from scoring.generation_report import Table
from scoring.matching import CONTROLS, READINGS, MatchedControl, matched_control_summary
from scoring.nulls import content_null_summary
from scoring.paired_controls import READINGS as PAIRED_READINGS
from scoring.paired_controls import PairedControl, paired_control
from scoring.report import COLUMNS, RunSummary, table_rows, top_k_label
from scoring.runs import read_run


def _matched_table(m: MatchedControl, k: int | None) -> Table:
    boundary = " — a reversal is a boundary condition, not a failure" if m.control == "role" else ""
    return Table(
        f"control-{m.control}",
        f"{m.control}-matched non-invalid control, top-{top_k_label(k)} (observed = invalid share, "
        f"baseline = matched-control share; {m.n_targets} targets with Invalid factors, "
        f"{m.n_unmatched} unmatched, {m.n_fallbacks}/{m.n_matches} matches outside the preferred pool){boundary}",
        COMPARISON_COLUMNS,
        comparison_table_rows(m.rows, READINGS[m.control]),
    )


def paired_table(p: PairedControl, k: int | None) -> Table:
    what = {
        "order-shuffle": "shuffled order (observed) against the original order (baseline)",
        "placeholder": "placeholder mask (observed) against deletion (baseline)",
        "no-invalid": "rewritten run's share at the formerly Invalid positions (observed) against "
        "their original invalid share (baseline)",
    }[p.control]
    extra = (
        f"; {p.n_rewritten_with_invalid} rewritten targets still carry an Invalid label (must be 0)"
        if p.control == "no-invalid"
        else ""
    )
    return Table(
        f"paired-{p.control}",
        f"{what}, top-{top_k_label(k)}; vs {p.coalition_run}: {p.n_paired} paired targets, "
        f"{p.n_unpaired} without a partner or an Invalid factor{extra}",
        COMPARISON_COLUMNS,
        comparison_table_rows(p.rows, PAIRED_READINGS[p.control]),
    )


def control_tables(
    store: Any,
    run_id: str,
    *,
    stored: bool,
    coalition_run: str | None = None,
    dataset: str | None = None,
    score_field: str = "sum_logodds",
    k: int | None = 50,
    fields: Sequence[str] = ("s_frac", "s_any"),
    n_resamples: int = 20_000,
) -> list[Table]:
    """The paired table of a construction run, then (``stored``) every stored-score control's table."""
    config, scored = read_run(store, run_id)
    targets = list(scored)
    options: dict[str, Any] = {
        "score_field": score_field,
        "k": k,
        "fields": fields,
        "n_resamples": n_resamples,
    }
    tables = []
    if config.get("experiment") in CONSTRUCTION_EXPERIMENTS:
        tables.append(paired_table(paired_control(store, run_id, coalition_run, **options), k))
    if not stored:
        return tables
    tasks = tasks_of_run(config, dataset)
    null = content_null_summary(targets, tasks, **options)
    tables.append(
        Table(
            "control-content-null",
            f"content-type-matched null: labels shuffled within the six content buckets, "
            f"500 permutations, seed 17, top-{top_k_label(k)}",
            COLUMNS,
            table_rows(RunSummary(null, len(targets), 0, score_field, tuple(fields))),
        )
    )
    tables.extend(_matched_table(matched_control_summary(c, targets, tasks, **options), k) for c in CONTROLS)
    coarse = coarsening_summary(targets, tasks, **options)
    for grouping in dict.fromkeys(r.grouping for r in coarse):
        rows = [r for r in coarse if r.grouping == grouping]
        tables.append(
            Table(
                f"coarsening-{grouping}",
                f"exact coarsening by {grouping} groups (mean {rows[0].mean_groups:.1f} groups per task; "
                "merged label: invalid if any member is, else valid if any, else neutral; label-count null)",
                COLUMNS,
                table_rows(RunSummary([r.row for r in rows], len(targets), 0, score_field, tuple(fields))),
            )
        )
    return tables
