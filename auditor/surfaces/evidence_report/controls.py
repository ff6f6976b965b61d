"""Tables of the audit's controls and costs: the null and construction controls, elicitation
agreement, the perturbation and free-generation checks, the API proxy, the workload.

The elicitation and proxy tables stack one row block per run like the attribution tables; the
workload table is the §16.5 record of every scoring run (deterministic model requests, then the
measured time and device of the sessions that made them).
"""

from __future__ import annotations

from typing import Any

from auditor.surfaces.evidence_report.attribution import SCORE_FIELD, partnered, pooled, run_command
from auditor.surfaces.evidence_report.source import Evidence
from auditor.surfaces.evidence_report.table import Table, placeholder
from scoring.api_proxy import COLUMNS as PROXY_COLUMNS
from scoring.api_proxy import NOT_TEACHER_FORCED, read_proxy, summarise_proxy
from scoring.api_proxy import table_rows as proxy_rows
from scoring.coarsening import GROUPINGS
from scoring.comparison import COMPARISON_COLUMNS
from scoring.consequence import consequence_rows, flip_cells, free_generation, perturbation_consequence
from scoring.construction import CONSTRUCTION_EXPERIMENTS
from scoring.control_report import control_tables
from scoring.cost import all_costs
from scoring.datasets import BUILDERS as DATASETS
from scoring.elicitation import VARIANTS, elicitation_agreement
from scoring.generation_report import Table as RunTable
from scoring.generation_report import consequence_tables, perturbation_tables
from scoring.matching import CONTROLS as MATCHED_CONTROLS
from scoring.report import COLUMNS as COALITION_COLUMNS
from scoring.runs import read_config, read_generations, read_run

TITLES = {
    "paired-order-shuffle": "Construction control: factor-order shuffle against the original order (§15)",
    "paired-placeholder": "Construction control: placeholder mask against deletion (§15)",
    "paired-no-invalid": "Construction control: source-preserving no-invalid rewrite, paired with the originals",
    "control-content-null": "Null control: labels shuffled within the six content buckets",
    "control-salience": "Null control: first-order-salience-matched non-invalid factors",
    "control-value-bearing": "Null control: value-bearing salience-matched factors",
    "control-role": "Null control: role/competition-matched factors (a reversal is a boundary condition)",
    "coarsening-source": "Construction control: exact coarsening by source groups",
    "coarsening-source-type": "Construction control: exact coarsening by source–type groups",
    "coarsening-type": "Construction control: exact coarsening by type groups",
    "elicitation": "Score-elicitation variants: per-target invalid shares against the direct prompt",
    "perturbation_flips": "Perturbation: action changes after removing the target's Invalid factors",
    "perturbation_consequence": "Perturbation consequence check: high − low invalid-share selectors (§15)",
    "free_generation": "Free-generation sanity check: top and bottom tasks by slot invalid share (§15)",
    "api_proxy": "API proxy: first-token log P(yes) − log P(no), full vs no-invalid context (not the audit)",
}
CONSTRUCTION_DENOMINATOR = (
    "denominator: targets with an Invalid factor paired across the construction run and its coalition "
    "run (95% CI: source-task cluster bootstrap)"
)
STORED_TABLES = {
    "control-content-null": COALITION_COLUMNS,
    **{f"control-{c}": COMPARISON_COLUMNS for c in MATCHED_CONTROLS},
    **{f"coarsening-{g}": COALITION_COLUMNS for g in GROUPINGS},
}
STORED_DENOMINATORS = dict.fromkeys(
    STORED_TABLES,
    "denominator: targets with an Invalid factor (top-50 terms of order ≤ 3; 95% CI: source-task cluster bootstrap)",
)
ELICITATION_COLUMNS = ["variant", "cell", "share", "targets", "Pearson r", "Spearman ρ"]
WORKLOAD_COLUMNS = [
    "run",
    "experiment",
    "model",
    "dataset",
    "records",
    "model requests",
    "scoring time",
    "model load",
    "device",
]


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def elicitation(ev: Evidence) -> list[Table]:
    """Pearson and Spearman of invalid shares, each variant run against its dataset and model's
    coalition run (the direct prompt)."""
    runs = [r for variant in VARIANTS for r in partnered(ev, variant)]
    partner = dict(runs)

    def read(store: Any, run_id: str) -> tuple[dict[str, Any], list[Any]]:
        config, variant = ev.read(read_run, run_id)
        direct = ev.read(read_run, partner[run_id]["coalition_run"])[1]
        return config, elicitation_agreement(direct, variant, SCORE_FIELD)

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        title = (
            f"denominator: targets with an Invalid factor scored in both runs (Harsanyi top-50, order ≤ 3, "
            f"{SCORE_FIELD}); n/a below three targets or for a constant share"
        )
        variant = str(config.get("experiment", ""))
        body = [[variant, r.cell, r.share, str(r.n_targets), _fmt(r.pearson), _fmt(r.spearman)] for r in rows]
        return [RunTable("elicitation", title, ELICITATION_COLUMNS, body)]

    command = run_command("elicit-yesno") + " (beside a coalition run of the same dataset and model)"
    return pooled(ev, "elicitation", runs, read, tables, command, titles=TITLES)


def api_proxy(ev: Evidence) -> list[Table]:
    """The forced-choice log-probability proxy per gateway model, stated as not the audit."""

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        cells, without = summarise_proxy(str(config.get("dataset")), rows, n)
        title = (
            f"{NOT_TEACHER_FORCED} Denominator: targets with an Invalid factor ({without} without one "
            "are left out); 95% CI: source-task cluster bootstrap"
        )
        return [RunTable("api_proxy", title, PROXY_COLUMNS, proxy_rows(cells))]

    command = "auditor score run --dataset agentaudit --experiment api-proxy --model litellm/<name>"
    return pooled(ev, "api-proxy", ev.runs("api-proxy"), read_proxy, tables, command, titles=TITLES)


def workload(ev: Evidence) -> list[Table]:
    """§16.5: model requests per run, fixed by the design, beside the sessions' time and device."""
    title = "Computational workload: model requests per run (§16.5), with measured time and device"
    denominator = (
        "one model request = one teacher-forced subset prompt of one target, one matched context, or one "
        "generated action; times are scoring seconds summed over the run's sessions (model load apart)"
    )
    costs = all_costs(ev.store)
    if not costs:
        return [placeholder("workload", title, WORKLOAD_COLUMNS, denominator, run_command("coalition"))]
    rows = [
        [
            c.run_id,
            c.experiment,
            c.model,
            c.dataset,
            str(c.records),
            f"{c.requests:,}",
            "not recorded" if c.seconds is None else f"{c.seconds:,.1f} s",
            "" if c.load_seconds is None else f"{c.load_seconds:,.1f} s",
            ", ".join(c.devices),
        ]
        for c in costs
    ]
    models = ", ".join(sorted({c.model for c in costs}))
    return [Table("workload", title, WORKLOAD_COLUMNS, rows, denominator, f"model(s) {models}")]


def perturbation(ev: Evidence) -> list[Table]:
    """Action flips after removing the Invalid factors, then, beside a coalition run of the same
    dataset and model, the consequence check per selector and the free-generation check."""
    runs = ev.runs("perturbation")

    def flips(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        return perturbation_tables(flip_cells(rows))

    out = pooled(
        ev, "perturbation", runs, read_generations, flips, run_command("perturbation"), titles=TITLES
    )
    joined = partnered(ev, "perturbation")
    partner = dict(joined)

    def read(store: Any, run_id: str) -> tuple[dict[str, Any], list[Any]]:
        config, rows = ev.read(read_generations, run_id)
        return config, [rows, ev.read(read_run, partner[run_id]["coalition_run"])[1]]

    def checks(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        generations, scored = rows if rows else ([], [])
        selectors = perturbation_consequence(consequence_rows(generations, scored, SCORE_FIELD))
        return consequence_tables(selectors, free_generation(generations, scored, str(config.get("dataset"))))

    command = run_command("coalition") + " (beside a perturbation run of the same dataset and model)"
    return out + pooled(ev, "perturbation", joined, read, checks, command, titles=TITLES)


def _keyed(tables: list[RunTable]) -> dict[str, RunTable]:
    return {t.name: t for t in tables}


def construction(ev: Evidence) -> list[Table]:
    """Each construction run (order shuffle, placeholder mask, no-invalid rewrite) against the
    coalition run it was built from (§15)."""
    out = []
    for experiment in CONSTRUCTION_EXPERIMENTS:
        runs = [(r, c) for r, c in ev.runs(experiment) if c.get("dataset") in DATASETS]

        def tables(
            config: dict[str, Any], rows: list[Any], n: int, experiment: str = experiment
        ) -> list[RunTable]:
            name = f"paired-{experiment}"
            if not rows:  # the template: the comparison's columns, no rows
                return [RunTable(name, CONSTRUCTION_DENOMINATOR, COMPARISON_COLUMNS, [])]
            (table,) = control_tables(ev.store, rows[0], stored=False, n_resamples=n)
            return [table]

        def read(store: Any, run_id: str) -> tuple[dict[str, Any], list[Any]]:
            return read_config(store, run_id), [run_id]

        out += pooled(ev, experiment, runs, read, tables, run_command(experiment), titles=TITLES)
    return out


def stored_controls(ev: Evidence) -> list[Table]:
    """The content-type null, the three matched controls and the three exact coarsenings of every
    coalition run over a built-in dataset, from its stored subset scores (no model call)."""
    runs = [(r, c) for r, c in ev.runs("coalition") if c.get("dataset") in DATASETS]

    def read(store: Any, run_id: str) -> tuple[dict[str, Any], list[Any]]:
        return read_config(store, run_id), [run_id]

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        if not rows:
            return [
                RunTable(key, STORED_DENOMINATORS[key], columns, []) for key, columns in STORED_TABLES.items()
            ]
        built = _keyed(control_tables(ev.store, rows[0], stored=True, n_resamples=n))
        empty = lambda key: RunTable(key, STORED_DENOMINATORS[key], STORED_TABLES[key], [])  # noqa: E731
        return [built.get(key) or empty(key) for key in STORED_TABLES]  # a run with no target yet

    return pooled(ev, "coalition", runs, read, tables, run_command("coalition"), titles=TITLES)
