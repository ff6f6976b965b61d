"""The reports of `auditor score report`: one per experiment, each a table for people, `--json`
for machines, and CSV/PNG beside them; every figure is read back from the run's stored events."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.surfaces.cli.common import console, print_json, print_table

if TYPE_CHECKING:
    from auditor.core.store import EventStore
    from scoring.rescue_prediction import RescuePrediction
    from scoring.runs import GeneratedAction, ScoredTarget


def report_run(
    store: EventStore,
    run_id: str,
    folder: Path,
    *,
    score_field: str,
    top_k: str,
    shares: str,
    resamples: int,
    coalition_run: str | None,
    controls: bool,
    control_dataset: str | None,
    direct_run: str | None,
    as_json: bool,
) -> None:
    """The report of one run, by its experiment (see `auditor score report --help`)."""
    from auditor.core.errors import InputError
    from scoring.construction import CONSTRUCTION_EXPERIMENTS
    from scoring.report import (
        BASELINE_K,
        COLUMNS,
        SHARE_GROUPS,
        TOP_K_CHOICES,
        summarise_run,
        table_rows,
        write_csv,
        write_png,
    )
    from scoring.runs import SCORE_FIELDS, read_config, read_run

    experiment = read_config(store, run_id).get("experiment")
    if controls and experiment not in ("coalition", *CONSTRUCTION_EXPERIMENTS):
        raise InputError(
            f"--controls applies to coalition-shaped runs, not {experiment!r}",
            field="controls",
            hint=f"give a coalition, {', '.join(CONSTRUCTION_EXPERIMENTS)} run",
        )
    if experiment == "api-proxy":
        _api_proxy_report(store, run_id, folder, resamples, as_json)
        return
    if direct_run is not None:
        _elicitation_report(store, run_id, direct_run, score_field, as_json)
        return
    if experiment == "generation":
        _generation_report(store, run_id, folder, resamples, coalition_run, as_json)
        return
    if experiment == "perturbation":
        _perturbation_report(store, run_id, folder, coalition_run, as_json)
        return
    if experiment == "degradation":
        _degradation_report(store, run_id, folder, resamples, coalition_run, as_json)
        return
    if experiment == "guardrail" and coalition_run is None:
        _guardrail_report(store, run_id, folder, resamples, as_json)
        return
    if coalition_run is not None and experiment not in CONSTRUCTION_EXPERIMENTS:
        raise InputError(
            "--coalition-run applies to generation, degradation and construction-control runs only",
            field="coalition-run",
            hint=f"{run_id} is not one",
        )
    if score_field not in SCORE_FIELDS:
        raise InputError(
            f"unknown score field {score_field!r}", field="score-field", hint=", ".join(SCORE_FIELDS)
        )
    if experiment == "matched":
        _matched_report(store, run_id, folder, score_field, resamples, as_json)
        return
    if experiment == "screening":
        _screening_report(store, run_id, score_field, as_json)
        return
    if top_k != "sweep" and top_k not in TOP_K_CHOICES:
        raise InputError(
            f"unknown top-K {top_k!r}", field="top-k", hint=f"{', '.join(TOP_K_CHOICES)} or sweep"
        )
    if shares not in SHARE_GROUPS:
        raise InputError(f"unknown share group {shares!r}", field="shares", hint=", ".join(SHARE_GROUPS))
    ks = list(TOP_K_CHOICES.values()) if top_k == "sweep" else [TOP_K_CHOICES[top_k]]
    config, targets = read_run(store, run_id)
    summary = summarise_run(
        targets, score_field=score_field, ks=ks, fields=SHARE_GROUPS[shares], n_resamples=resamples
    )
    rows = table_rows(summary)
    extra = _control_tables(
        store,
        run_id,
        folder,
        controls,
        coalition_run,
        control_dataset,
        score_field,
        ks[0] if len(ks) == 1 else 50,  # a sweep's controls stay at the primary K
        shares,
        resamples,
    )  # computed before anything is written: a control that fails leaves no half-written report
    write_csv(summary, folder / f"{run_id}.csv")
    write_png(summary, folder / f"{run_id}.png", f"{run_id} ({config['model']}, {score_field})")
    if as_json:
        payload = {
            "run": config,
            "n_targets": summary.n_targets,
            "without_invalid": summary.n_without_invalid,
            "rows": [dict(zip(COLUMNS, r, strict=True)) for r in rows],
        }
        if extra:
            payload["controls"] = {
                t.name: [dict(zip(t.columns, r, strict=True)) for r in t.rows] for t in extra
            }
        print_json(payload)
        return
    for label in dict.fromkeys(r[1] for r in rows):  # one table per top-K, then the baselines
        what = "baselines: every first-order term" if label == BASELINE_K else f"top-{label}, order ≤ 3"
        print_table(
            f"{run_id}: {config['dataset']} × {config['model']} ({score_field}, {what}, "
            f"500-permutation null, {shares} shares)",
            COLUMNS,
            [r for r in rows if r[1] == label],
        )
    for table in extra:
        print_table(f"{run_id}: {table.title}", table.columns, table.rows)
    console.print(
        f"{summary.n_targets} targets; {summary.n_without_invalid} without an Invalid factor have no "
        f"invalid share and are left out. CSV and PNG in {folder}"
    )


def _control_tables(
    store: EventStore,
    run_id: str,
    folder: Path,
    controls: bool,
    coalition_run: str | None,
    dataset: str | None,
    score_field: str,
    k: int | None,
    shares: str,
    resamples: int,
) -> list[Any]:
    """A construction run's paired table and, with --controls, the stored-score controls; one CSV each."""
    from scoring.construction import CONSTRUCTION_EXPERIMENTS
    from scoring.control_report import control_tables
    from scoring.generation_report import write_csvs
    from scoring.report import SHARE_GROUPS
    from scoring.runs import read_config

    if not controls and read_config(store, run_id).get("experiment") not in CONSTRUCTION_EXPERIMENTS:
        return []
    tables = control_tables(
        store,
        run_id,
        stored=controls,
        coalition_run=coalition_run,
        dataset=dataset,
        score_field=score_field,
        k=k,
        fields=SHARE_GROUPS[shares],
        n_resamples=resamples,
    )
    write_csvs(tables, folder, run_id)
    return tables


def _generation_report(
    store: EventStore, run_id: str, folder: Path, resamples: int, coalition_run: str | None, as_json: bool
) -> None:
    from scoring.action_stats import summarise_generations
    from scoring.generation_report import generation_tables, prediction_table
    from scoring.runs import read_generations

    config, rows = read_generations(store, run_id)
    summary = summarise_generations(rows, n_resamples=resamples)
    tables = generation_tables(summary)
    if coalition_run is not None:
        tables.append(prediction_table(_rescue_predictions(store, config, rows, coalition_run)))
    counts = {"n_generations": summary.n_generations, "n_targets": summary.n_targets}
    footer = f"{summary.n_generations} generations of {summary.n_targets} targets"
    _print_generation_tables(run_id, config, tables, folder, counts, footer, as_json)


def _degradation_report(
    store: EventStore, run_id: str, folder: Path, resamples: int, coalition_run: str | None, as_json: bool
) -> None:
    from scoring.datasets import build_dataset
    from scoring.degradation_prediction import predict_degradation, prediction_rows
    from scoring.degradation_stats import degradation_rows, summarise_degradation
    from scoring.generation_report import degradation_prediction_tables, degradation_tables
    from scoring.runs import read_generations

    config, rows = read_generations(store, run_id)
    summary = summarise_degradation(rows)
    tables = degradation_tables(summary)
    if coalition_run is not None:
        scored = _coalition_targets(store, config, coalition_run)
        tasks = {t.task_id: t for t in build_dataset(config["dataset"])}
        joined = prediction_rows(degradation_rows(rows), scored, tasks)
        tables += degradation_prediction_tables(predict_degradation(joined, min(resamples, 2_000)))
    counts = {"n_generations": summary.n_generations, "n_rows": summary.n_rows}
    footer = f"{summary.n_generations} generations, {summary.n_rows} target-valid rows"
    _print_generation_tables(run_id, config, tables, folder, counts, footer, as_json)


def _perturbation_report(
    store: EventStore, run_id: str, folder: Path, coalition_run: str | None, as_json: bool
) -> None:
    from scoring.consequence import consequence_rows, flip_cells, free_generation, perturbation_consequence
    from scoring.generation_report import consequence_tables, perturbation_tables
    from scoring.runs import read_generations

    config, rows = read_generations(store, run_id)
    tables = perturbation_tables(flip_cells(rows))
    if coalition_run is not None:
        scored = list(_coalition_targets(store, config, coalition_run))
        selectors = perturbation_consequence(consequence_rows(rows, scored))
        tables += consequence_tables(selectors, free_generation(rows, scored, config["dataset"]))
    counts = {"n_generations": len(rows), "n_targets": len({r.target_key for r in rows})}
    footer = f"{counts['n_generations']} generations of {counts['n_targets']} targets"
    _print_generation_tables(run_id, config, tables, folder, counts, footer, as_json)


def _guardrail_report(store: EventStore, run_id: str, folder: Path, resamples: int, as_json: bool) -> None:
    from scoring.generation_report import guardrail_tables
    from scoring.guardrail_stats import summarise_guardrail
    from scoring.runs import read_generations

    config, rows = read_generations(store, run_id)
    summary = summarise_guardrail(rows, n_resamples=resamples)
    counts = {"n_generations": summary.n_generations, "n_targets": summary.n_targets}
    footer = f"{summary.n_generations} generations of {summary.n_targets} targets"
    _print_generation_tables(run_id, config, guardrail_tables(summary), folder, counts, footer, as_json)


def _elicitation_report(
    store: EventStore, run_id: str, direct_run: str, score_field: str, as_json: bool
) -> None:
    from auditor.core.errors import InputError
    from scoring.elicitation import VARIANTS, elicitation_agreement
    from scoring.runs import read_run

    config, variant = read_run(store, run_id)
    if config.get("experiment") not in VARIANTS:
        raise InputError(
            f"run {run_id} is a {config.get('experiment')} run, not an elicitation run",
            field="direct-run",
            hint=f"--direct-run applies to {', '.join(VARIANTS)} runs",
        )
    rows = elicitation_agreement(_coalition_targets(store, config, direct_run), variant, score_field)
    if as_json:
        print_json({"run": config, "direct_run": direct_run, "agreement": [asdict(r) for r in rows]})
        return
    fmt = lambda x: "n/a" if x is None else f"{x:+.3f}"  # noqa: E731
    print_table(
        f"{run_id} vs {direct_run}: per-target invalid shares (Harsanyi top-50, order ≤ 3, {score_field}) "
        f"under {config['experiment']} against the direct prompt (denominator: targets with an Invalid "
        "factor scored in both runs)",
        ["cell", "share", "targets", "Pearson r", "Spearman ρ"],
        [[r.cell, r.share, r.n_targets, fmt(r.pearson), fmt(r.spearman)] for r in rows],
    )


def _model_label(config: dict[str, Any]) -> str:
    """The model, and the instruction added to its prompts when there is one."""
    added = config.get("instruction")
    return config["model"] if added is None else f"{config['model']} (instruction: {added})"


def _print_generation_tables(
    run_id: str,
    config: dict[str, Any],
    tables: list[Any],
    folder: Path,
    counts: dict[str, int],
    footer: str,
    as_json: bool,
) -> None:
    """Write a generated-action run's tables as CSV, then print them (or all of it as JSON)."""
    from scoring.generation_report import write_csvs

    write_csvs(tables, folder, run_id)
    if as_json:
        rows = {t.name: [dict(zip(t.columns, r, strict=True)) for r in t.rows] for t in tables}
        print_json({"run": config, **counts, "tables": rows})
        return
    if not counts["n_generations"]:
        console.print(f"run {run_id} holds no generations yet: every table below is empty")
    for table in tables:
        print_table(
            f"{run_id}: {config['dataset']} × {_model_label(config)}: {table.title}",
            table.columns,
            table.rows,
        )
    console.print(f"{footer} (greedy, {config.get('max_new_tokens')} new tokens at most). CSV in {folder}")


def _matched_report(
    store: EventStore, run_id: str, folder: Path, score_field: str, resamples: int, as_json: bool
) -> None:
    from scoring.generation_report import write_csvs
    from scoring.matched_report import matched_tables
    from scoring.runs import read_matched

    config, rows = read_matched(store, run_id)
    tables = matched_tables(rows, config["dataset"], score_field, resamples)
    write_csvs(tables, folder, run_id)
    if as_json:
        print_json(
            {
                "run": config,
                "n_targets": len(rows),
                "tables": {t.name: [dict(zip(t.columns, r, strict=True)) for r in t.rows] for t in tables},
            }
        )
        return
    for table in tables:
        print_table(f"{run_id}: {_model_label(config)}: {table.title}", table.columns, table.rows)
    console.print(f"{len(rows)} targets. CSV in {folder}")


def _screening_report(store: EventStore, run_id: str, score_field: str, as_json: bool) -> None:
    from scoring.runs import read_screening
    from scoring.screening import KEEP, RETENTION_COLUMNS, retention_rows

    config, rows = read_screening(store, run_id)
    table = retention_rows(rows, score_field)
    if as_json:
        print_json(
            {
                "run": config,
                "n_targets": len(rows),
                "retention": [dict(zip(RETENTION_COLUMNS, r, strict=True)) for r in table],
            }
        )
        return
    print_table(
        f"{run_id}: {config['dataset']} × {config['model']} — factors kept of {config['n_factors']} "
        f"(keep {KEEP}, masks through order {config['order']}, {score_field})",
        RETENTION_COLUMNS,
        table,
    )
    console.print(f"{len(rows)} targets; rates pool factors over targets, each naming its denominator.")


def _rescue_predictions(
    store: EventStore, config: dict[str, Any], rows: list[GeneratedAction], coalition_run: str
) -> list[RescuePrediction]:
    from scoring.rescue_prediction import predict_rescue, rescue_cohort

    return predict_rescue(rescue_cohort(rows, _coalition_targets(store, config, coalition_run)))


def _coalition_targets(
    store: EventStore, config: dict[str, Any], coalition_run: str
) -> Iterator[ScoredTarget]:
    """The targets of a coalition run of the same dataset and model as the run being reported."""
    from scoring.runs import check_coalition_partner, read_run

    check_coalition_partner(store, config, coalition_run)
    return read_run(store, coalition_run)[1]


def _api_proxy_report(store: EventStore, run_id: str, folder: Path, resamples: int, as_json: bool) -> None:
    from scoring.api_proxy import (
        COLUMNS,
        NOT_TEACHER_FORCED,
        read_proxy,
        summarise_proxy,
        table_rows,
        write_csv,
    )

    config, rows = read_proxy(store, run_id)
    cells, n_without = summarise_proxy(config["dataset"], rows, resamples)
    table = table_rows(cells)
    requests = sum(r.n_requests for r in rows)
    write_csv(table, folder / f"{run_id}.csv")
    if as_json:
        print_json(
            {
                "run": config,
                "method": NOT_TEACHER_FORCED,
                "n_targets": len(rows),
                "without_invalid": n_without,
                "n_requests": requests,
                "rows": [dict(zip(COLUMNS, r, strict=True)) for r in table],
            }
        )
        return
    print_table(
        f"{run_id}: {config['dataset']} × {config['gateway_model']}: API logprob proxy (Δ = full − no-invalid)",
        COLUMNS,
        table,
    )
    console.print(
        f"{NOT_TEACHER_FORCED}\n{len(rows)} targets ({n_without} without an Invalid factor have no contrast); "
        f"{requests} model requests; an unassessed row lacked 'yes' or 'no' in the top-logprobs. CSV in {folder}"
    )
