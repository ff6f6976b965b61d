"""Attribution-audit tables, pooled over every scoring run in the store (one row block per model).

Each experiment's one-run tables come from the same functions ``auditor score report`` uses; here
each row is prefixed by the run's model, dataset and run id, so several models sit side by side.
An experiment with no run keeps its tables, built on an empty run for their columns and
denominators, and says which command would fill them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from auditor.surfaces.evidence_report.source import Evidence
from auditor.surfaces.evidence_report.table import Bar, Figure, Table, placeholder
from scoring.action_stats import summarise_generations
from scoring.datasets import BUILDERS as DATASETS
from scoring.datasets import build_dataset
from scoring.degradation_prediction import predict_degradation, prediction_rows
from scoring.degradation_stats import degradation_rows, summarise_degradation
from scoring.generation_report import Table as RunTable
from scoring.generation_report import (
    degradation_prediction_tables,
    degradation_tables,
    generation_tables,
    guardrail_tables,
    prediction_table,
)
from scoring.guardrail_stats import summarise_guardrail
from scoring.matched_report import MatchedCell, matched_tables, summarise_matched
from scoring.report import COLUMNS as COALITION_COLUMNS
from scoring.report import summarise_run, table_rows
from scoring.rescue_prediction import predict_rescue, rescue_cohort
from scoring.runs import read_generations, read_matched, read_run, read_screening
from scoring.screening import RETENTION_COLUMNS, retention_rows
from scoring.stats import BootstrapInterval

SCORE_FIELD = "sum_logodds"
BLOCK = ["model", "dataset", "run"]
# A run's configuration, its rows as read from the store, the resample budget → its one-run tables.
RunTables = Callable[[dict[str, Any], list[Any], int], list[RunTable]]

TITLES = {
    "matched": "Matched source interventions: support and competition by source, ΔΔ (Table 1 style)",
    "same_proposition": "Same-proposition control: one competitor's marker flipped",
    "support_arm": "Authority-by-relation supporting arm (§15.6)",
    "co_present": "Exact-text co-present check: a source-marked duplicate of a supporting factor (§15.6)",
    "accuracy": "Generated actions: accuracy per context",
    "discordance": "Generated actions: trusted vs untrusted discordance and transitions",
    "contrast": "Generated actions: competition − support discordance",
    "competitor": "Generated actions: incorrect generations matching the competitor",
    "flip": "Generated actions: authority flip",
    "rescue": "Generated actions: rescue of base errors",
    "degradation": "Valid-evidence degradation: c_F, c_M, c_C, mixed–clean discordance, retained-invalid",
    "retained_invalid": "Valid-evidence degradation: rows with the retained-invalid pattern (1, 0, 1)",
    "rescue_prediction": "Generated actions: rescue of base errors predicted from a coalition run (§13.3)",
    "degradation_predictors": "Valid-evidence degradation: AUROCs of score-based predictors (§4.4)",
    "degradation_held_out": "Valid-evidence degradation: source-task-held-out combined model AUROC",
    "coalition": "Coalition anchors: empty Harsanyi, Shapley and full-context invalid shares and excess",
    "screening-12": "Longer-context screening at 12 factors: factors kept of 12",
    "screening-16": "Longer-context screening at 16 factors: factors kept of 16",
    "guardrail_errors": "Guardrail: competition errors with and without the authority policy",
    "guardrail_change": "Guardrail: policy − plain change per endpoint",
}


def model_label(config: dict[str, Any]) -> str:
    """The model, with the instruction added to its prompts where a run has one (the robustness
    runs of one model then sit side by side as separate row blocks)."""
    added = config.get("instruction")
    return str(config.get("model")) if added is None else f"{config.get('model')} (instruction: {added})"


def run_command(experiment: str, extra: str = "") -> str:
    return f"auditor score run --dataset agentaudit --model smollm2 --experiment {experiment}{extra}"


def pooled(
    ev: Evidence,
    experiment: str,
    runs: list[tuple[str, dict[str, Any]]],
    read: Callable[[Any, str], tuple[dict[str, Any], Any]],
    tables: RunTables,
    command: str,
    key_suffix: str = "",
    titles: dict[str, str] = TITLES,
) -> list[Table]:
    """One evidence table per one-run table, its rows stacked run by run under (model, dataset, run)."""
    template = tables({"dataset": "each run's dataset"}, [], 100)
    blocks: dict[str, list[list[str]]] = {t.name: [] for t in template}
    shown = [r + (f" + {c['coalition_run']}" if "coalition_run" in c else "") for r, c in runs]
    for (run_id, config), name in zip(runs, shown, strict=True):
        _, rows = ev.read(read, run_id)
        for table in tables(config, rows, ev.n_resamples):
            prefix = [model_label(config), str(config.get("dataset")), name]
            blocks[table.name] += [prefix + r for r in table.rows]
    models = sorted({model_label(c) for _, c in runs})
    source = f"model(s) {', '.join(models)}; {len(runs)} {experiment} run(s): {', '.join(shown)}"
    out = []
    for t in template:
        key = f"{t.name}{key_suffix}"
        columns = BLOCK + t.columns
        if not runs:
            out.append(placeholder(key, titles[key], columns, t.title, command))
        else:
            out.append(Table(key, titles[key], columns, blocks[t.name], t.title, source))
    return out


def matched(ev: Evidence) -> list[Table]:
    """Table 1, the same-proposition control and the supporting arm, from ``MatchedScored`` events,
    with a figure of each run's ΔΔ over all targets."""
    runs = ev.runs("matched")
    delta: dict[str, MatchedCell] = {}  # run id → its all-targets cell, kept for the figure

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        cells = summarise_matched(rows, SCORE_FIELD, n)
        if "run_id" in config:
            delta[config["run_id"]] = cells[0]
        return matched_tables(rows, config["dataset"], SCORE_FIELD, n, factorial=cells)

    first, *rest = pooled(ev, "matched", runs, read_matched, tables, run_command("matched"))
    bars = [
        Bar(
            f"{config['model']}\n{run_id}", cell.means["delta_delta"], *_bounds(cell.intervals["delta_delta"])
        )
        for run_id, config in runs
        if (cell := delta.get(run_id)) is not None and cell.means
    ]
    if bars:
        first = replace(first, figure=Figure(f"ΔΔ, mean {SCORE_FIELD} change (all targets)", bars))
    return [first, *rest]


def _bounds(interval: BootstrapInterval | None) -> tuple[float | None, float | None]:
    return (None, None) if interval is None else (interval.low, interval.high)


def generation(ev: Evidence) -> list[Table]:
    """Accuracy, discordance and transitions, contrast, competitors, flips, rescue (``ActionGenerated``)."""
    runs = ev.runs("generation")

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        return generation_tables(summarise_generations(rows, n_resamples=n))

    return pooled(ev, "generation", runs, read_generations, tables, run_command("generation"))


def degradation(ev: Evidence) -> list[Table]:
    """Full / mixed / clean endpoints and the retained-invalid rows (``ActionGenerated``)."""
    runs = ev.runs("degradation")

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        return degradation_tables(summarise_degradation(rows))

    return pooled(ev, "degradation", runs, read_generations, tables, run_command("degradation"))


def partnered(ev: Evidence, experiment: str) -> list[tuple[str, dict[str, Any]]]:
    """Runs of ``experiment`` with a coalition run of the same (built-in) dataset and model, which
    is remembered in the configuration as ``coalition_run``."""
    out = []
    for run_id, config in ev.runs(experiment):
        partner = next(
            (
                r
                for r, c in ev.runs("coalition")
                if (c.get("dataset"), c.get("model")) == (config.get("dataset"), config.get("model"))
            ),
            None,
        )
        if partner is not None and config.get("dataset") in DATASETS:
            out.append((run_id, {**config, "coalition_run": partner}))
    return out


def rescue_prediction(ev: Evidence) -> list[Table]:
    """§13.3 AUROC and AP, where a generation run has a coalition run of its dataset and model."""
    runs = partnered(ev, "generation")
    partner = dict(runs)

    def read(store: Any, run_id: str) -> tuple[dict[str, Any], list[Any]]:
        config, rows = ev.read(read_generations, run_id)
        return config, rescue_cohort(rows, ev.read(read_run, partner[run_id]["coalition_run"])[1])

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        return [prediction_table(predict_rescue(rows))]

    command = run_command("coalition") + " (beside a generation run of the same dataset and model)"
    return pooled(ev, "generation", runs, read, tables, command)


def degradation_prediction(ev: Evidence) -> list[Table]:
    """§4.4 AUROCs, where a degradation run has a coalition run of its dataset and model."""
    runs = partnered(ev, "degradation")
    partner = dict(runs)

    def read(store: Any, run_id: str) -> tuple[dict[str, Any], list[Any]]:
        config, rows = ev.read(read_generations, run_id)
        scored = ev.read(read_run, partner[run_id]["coalition_run"])[1]
        tasks = {t.task_id: t for t in build_dataset(config["dataset"])}
        return config, prediction_rows(degradation_rows(rows), scored, tasks, SCORE_FIELD)

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        return degradation_prediction_tables(predict_degradation(rows, min(n, 2_000)))

    command = run_command("coalition") + " (beside a degradation run of the same dataset and model)"
    return pooled(ev, "degradation", runs, read, tables, command)


def coalition(ev: Evidence) -> list[Table]:
    """Observed, null and excess invalid shares per estimand at top-50 (``TargetScored``)."""
    runs = ev.runs("coalition")

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        summary = summarise_run(rows, score_field=SCORE_FIELD, n_resamples=n)
        n_without = summary.n_without_invalid
        title = (
            f"denominator: targets with an Invalid factor ({SCORE_FIELD}, top-50 terms of order ≤ 3, "
            f"500-permutation label-count null, 95% CI: source-task cluster bootstrap); targets without "
            f"one have no share and are left out ({n_without} here)"
        )
        return [RunTable("coalition", title, COALITION_COLUMNS, table_rows(summary))]

    return pooled(ev, "coalition", runs, read_run, tables, run_command("coalition"))


def screening(ev: Evidence) -> list[Table]:
    """Invalid and distractor retention per selector, at 12 and at 16 factors (``ScreeningScored``)."""
    out = []
    for n_factors in (12, 16):
        runs = [(r, c) for r, c in ev.runs("screening") if c.get("n_factors") == n_factors]
        command = run_command("screening", f" --factors {n_factors}")
        out += pooled(ev, "screening", runs, read_screening, _screening_tables, command, f"-{n_factors}")
    return out


def _screening_tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
    title = (
        "denominators: Invalid factors present and distractors present, pooled over targets "
        f"(keep 8, masks through order {config.get('order', 3)}, {SCORE_FIELD}, Wilson 95%)"
    )
    return [RunTable("screening", title, RETENTION_COLUMNS, retention_rows(rows, SCORE_FIELD))]


def guardrail(ev: Evidence) -> list[Table]:
    """Competition errors and source sensitivity with and without the authority policy."""
    runs = ev.runs("guardrail")

    def tables(config: dict[str, Any], rows: list[Any], n: int) -> list[RunTable]:
        return guardrail_tables(summarise_guardrail(rows, n_resamples=n))

    return pooled(ev, "guardrail", runs, read_generations, tables, run_command("guardrail"))
