"""`auditor world list|run|export`: run the micro-worlds, summarise endpoints, export bundles."""

from __future__ import annotations

from pathlib import Path

import typer

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import (
    JSON_OUTPUT,
    console,
    err_console,
    open_cli_store,
    print_json,
    print_table,
)


def _policy(world, name: str, family: str, model: str, max_actions: int, max_tokens: int):  # -> Policy
    if name == "scripted":
        return world.scripted(family)
    if name == "llm":
        from worlds.engine.llm_policy import LLMPolicy

        return LLMPolicy(model, world.scripted(family).table, family, max_actions, max_tokens)
    raise InputError(f"unknown policy {name!r}", hint="choose scripted or llm")


world_app = typer.Typer(
    help="The five micro-worlds: run episodes with known ground truth.", no_args_is_help=True
)


@world_app.command("list")
def list_(as_json: bool = JSON_OUTPUT) -> None:
    """The worlds, their conditions and primary endpoints."""
    from worlds import get_world, list_worlds

    rows = []
    for name in list_worlds():
        w = get_world(name)
        rows.append(
            {
                "world": name,
                "title": w.title,
                "conditions": list(w.conditions),
                "canonical": w.canonical_conditions,
                "primary": w.primary,
                "source_digest": w.source_digest(),
            }
        )
    if as_json:
        print_json(rows)
        return
    print_table(
        f"{len(rows)} worlds",
        ["world", "title", "conditions", "primary endpoint", "source"],
        [
            [r["world"], r["title"], ", ".join(r["conditions"]), r["primary"], r["source_digest"][:12]]
            for r in rows
        ],
    )


@world_app.command("run")
def run(
    world_name: str = typer.Argument(..., metavar="WORLD", help="A1, B1, C1, D1 or F1."),
    condition: list[str] = typer.Option(None, "--condition", "-c", help="Condition(s); default: canonical."),
    policy: str = typer.Option("scripted", help="scripted (offline) or llm (through the litellm gateway)."),
    model: str = typer.Option(
        "local/smollm2",
        "--model",
        help="llm policy: any litellm model name, local/<dir>, replay/<cassette>.",
    ),
    judge_model: str = typer.Option(
        None,
        "--judge-model",
        help="C1, D1, F1: also run the quote-grounded LLM judge on this model (default: deterministic only).",
    ),
    max_actions: int = typer.Option(12, min=1, help="llm policy: model calls per agent turn at most."),
    max_tokens: int = typer.Option(384, min=16, help="llm policy: output tokens per model call."),
    episodes: int = typer.Option(20, min=1, help="Episodes per condition."),
    seed: int = typer.Option(0, help="First seed; episode i uses seed+i."),
    templates: str = typer.Option("main", help="Scripted template family: main or heldout."),
    workflow: Path = typer.Option(None, help="A patched workflow YAML (default: the world's own)."),
    export: Path = typer.Option(None, "--export", help="Also write traces, labels and a manifest here."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not append the episodes to the store."),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Run a cohort, record it in the store, print endpoint rates with Wilson 95% intervals."""
    from rich.progress import Progress

    from scoring.stats import wilson_rate
    from worlds import (
        Workflow,
        export_bundle,
        get_world,
        mean_utility,
        record_cohort,
        run_cohort,
        summarise,
    )
    from worlds.engine.cohort import judge_agreement

    w = get_world(world_name)
    conds = condition or w.canonical_conditions
    for c in conds:
        w.check_condition(c)
    w.check_judge_model(judge_model)
    wf = Workflow.load(workflow) if workflow else None
    pol = _policy(w, policy, templates, model, max_actions, max_tokens)
    with Progress(console=err_console, transient=True, disable=as_json) as bar:
        task = bar.add_task(f"{w.name} episodes", total=episodes * len(conds))
        cohort = run_cohort(
            w,
            pol,
            conds,
            episodes,
            seed,
            workflow=wf,
            progress=lambda n: bar.advance(task, n),
            judge_model=judge_model,
        )
    if not no_store:
        record_cohort(open_cli_store(), cohort)
    if export:
        export_bundle(export, [(e.trace(), e.labels()) for e in cohort.episodes], cohort.manifest())
    rows = summarise(cohort, w.endpoints)
    util = mean_utility(cohort.episodes)
    agreed = judge_agreement(cohort.episodes)
    if as_json:
        print_json(
            {
                "cohort": cohort.manifest(),
                "mean_utility": util,
                "endpoints": [r.__dict__ for r in rows],
                **({"llm_judge": agreed.__dict__} if agreed else {}),
            }
        )
        return
    print_table(
        f"{w.name} cohort {cohort.cohort_id} ({len(cohort.episodes)} valid, {len(cohort.excluded)} excluded)",
        ["condition", "endpoint", "n/N", "rate", "95% CI"],
        [
            [
                r.condition,
                r.endpoint + (" *" if r.endpoint == w.primary else ""),
                f"{r.successes}/{r.total}",
                f"{r.rate:.1%}",
                f"{r.low:.1%}–{r.high:.1%}",
            ]
            for r in rows
        ],
    )
    console.print(f"mean task utility {util:.3f}" if util is not None else "no valid episodes")
    if agreed:
        r = wilson_rate(agreed.agree, agreed.items) if agreed.items else None
        shown = f" ({r.value:.1%}, 95% CI {r.low:.1%}–{r.high:.1%})" if r else ""
        console.print(
            f"{agreed.judge} agrees with the deterministic judge on {agreed.agree}/{agreed.items} items"
            f"{shown}; {agreed.zeroed} ungrounded scores zeroed, {agreed.unparsed} answers unparsed"
        )
    if export:
        console.print(f"exported {len(cohort.episodes)} traces to {export}")


@world_app.command("export")
def export_(
    cohort_id: str = typer.Argument(..., metavar="COHORT", help="Cohort id printed by 'auditor world run'."),
    out: Path = typer.Option(..., "-o", "--out", help="Output folder."),
) -> None:
    """Write a stored cohort as a sanitised bundle: traces/, labels.jsonl, manifest.json."""
    from worlds import export_bundle, load_cohort

    manifest, pairs = load_cohort(open_cli_store(), cohort_id)
    export_bundle(out, pairs, manifest)
    console.print(f"exported {len(pairs)} traces of {cohort_id} to {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(world_app, name="world")
