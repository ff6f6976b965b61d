"""`auditor score`: build attribution datasets, run teacher-forced scoring, report a run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from auditor.surfaces.cli.common import console, open_cli_store, print_json, print_table
from scoring.decode import MAX_NEW_TOKENS

if TYPE_CHECKING:
    from auditor.core.local_model import LoadedModel
    from auditor.core.store import EventStore
    from schemas.attribution import AttributionTask

score_app = typer.Typer(
    help="Attribution audit: target–factor datasets, coalition scoring runs, reports.", no_args_is_help=True
)
datasets_app = typer.Typer(help="Target–factor datasets built by code.", no_args_is_help=True)
score_app.add_typer(datasets_app, name="datasets")


@datasets_app.command("build")
def datasets_build(
    out: Path = typer.Option(Path("data/attribution"), "--out", help="Folder for <dataset>.jsonl files."),
    dataset: list[str] = typer.Option(None, "--dataset", help="Only these datasets (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the label report as JSON."),
) -> None:
    """Build, check the label invariants, write JSONL, and report label statistics."""
    from auditor.core.errors import ContractError
    from scoring.datasets import BUILDERS, build_dataset, invariant_violations, label_report, write_jsonl

    reports = {}
    for name in dataset or list(BUILDERS):
        tasks = build_dataset(name)
        problems = invariant_violations(tasks)
        if problems:
            raise ContractError(f"{name}: {len(problems)} label invariant(s) broken, first: {problems[0]}")
        write_jsonl(tasks, out / f"{name}.jsonl")
        reports[name] = label_report(tasks)
    if as_json:
        print_json({n: r.__dict__ for n, r in reports.items()})
        return
    rows = [
        [
            n,
            r.n_tasks,
            r.n_targets,
            r.counts.get("valid", 0),
            r.counts.get("invalid", 0),
            r.counts.get("neutral", 0),
            f"{r.majority_accuracy:.3f}",
            f"{r.source_type_accuracy:.3f}",
        ]
        for n, r in reports.items()
    ]
    print_table(
        f"datasets written to {out}",
        [
            "dataset",
            "tasks",
            "targets",
            "valid",
            "invalid",
            "neutral",
            "majority-label acc.",
            "source-type-only acc.",
        ],
        rows,
    )


@score_app.command("run")
def run(
    dataset: str = typer.Option(
        ..., "--dataset", help="agentaudit, tau2audit, bfclaudit, dojoaudit, or a .jsonl path."
    ),
    model: str = typer.Option(
        "smollm2", "--model", help="'smollm2' (local GGUF) or a transformers model dir."
    ),
    experiment: str = typer.Option(
        "coalition",
        "--experiment",
        help="coalition (every factor subset scored), generation (actions decoded per context) "
        "matched (target scored on the base and the four T/U × S/C cells) or degradation "
        "(actions decoded in full, mixed and clean contexts per Valid factor) or guardrail (base and "
        "competition cells decoded with and without the explicit authority policy) or screening "
        "(masks through --order of a 12- or 16-factor context with archived-task distractors); "
        "construction controls, each every subset scored: order-shuffle (factors in --shuffle's order), "
        "placeholder (omitted factors shown as placeholders), no-invalid (competing factors rewritten); "
        "api-proxy (first-token log P(yes) − log P(no) through the litellm gateway, --model "
        "litellm/<name>; a black-box proxy, not the teacher-forced audit).",
    ),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N tasks."),
    target_kind: str = typer.Option("all", "--target-kind", help="Audit only tool or slot targets (or all)."),
    max_new_tokens: int = typer.Option(
        MAX_NEW_TOKENS,
        "--max-new-tokens",
        min=8,
        help="Generation: the fixed greedy decoding budget per action.",
    ),
    run_id: str = typer.Option(None, "--run-id", help="Run id (default: derived, so a rerun resumes)."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    dtype: str = typer.Option("float32", "--dtype", help="float32 (default), bfloat16, float16."),
    token_budget: int = typer.Option(2048, "--token-budget", min=64, help="New tokens per batched call."),
    factors: int = typer.Option(12, "--factors", help="Screening: 12 or 16 factors per context."),
    order: int = typer.Option(3, "--order", min=2, max=3, help="Screening: score masks through this order."),
    shuffle: int = typer.Option(
        1, "--shuffle", help="order-shuffle: which of the two shuffled orders (1 or 2)."
    ),
    instruction: str = typer.Option(
        "none",
        "--instruction",
        help="Added to every task's system instruction: none (the minimal prompt), policy (the explicit "
        "authority policy of §15.6) or brief (an alternative authority wording), for the robustness checks.",
    ),
) -> None:
    """Score every subset of every target's factors, or decode each target's action in every context.

    Resumable: one event per target (coalition, matched, screening) or per target and context (generation,
    degradation, guardrail).
    """
    from auditor.core.errors import InputError
    from scoring.datasets import load_dataset
    from scoring.runs import CONTEXTS as GENERATED
    from scoring.runs import EXPERIMENTS, default_run_id, start_run

    if experiment not in EXPERIMENTS:
        raise InputError(
            f"unknown experiment {experiment!r}", field="experiment", hint=", ".join(EXPERIMENTS)
        )
    kinds = {"all": None, "tool": {"tool"}, "slot": {"slot"}}
    if target_kind not in kinds:
        raise InputError(
            f"unknown target kind {target_kind!r}", field="target-kind", hint="all, tool or slot"
        )
    from scoring.construction import constructed_tasks
    from scoring.elicitation import VARIANTS, elicited_tasks
    from scoring.prompts import INSTRUCTIONS, with_instruction

    if instruction not in INSTRUCTIONS:
        raise InputError(
            f"unknown instruction {instruction!r}", field="instruction", hint=", ".join(INSTRUCTIONS)
        )
    pool = load_dataset(dataset)
    tasks = [
        with_instruction(t, INSTRUCTIONS[instruction])
        for t in constructed_tasks(experiment, pool[:limit], shuffle)
    ]
    if experiment in VARIANTS:
        tasks = elicited_tasks(experiment, tasks)
    name = Path(dataset).stem if dataset.endswith(".jsonl") else dataset
    suffix = {"screening": f"-{factors}", "order-shuffle": f"-{shuffle}"}.get(experiment, "")
    suffix += "" if instruction == "none" else f"-{instruction}"
    rid = run_id or default_run_id(name, model, experiment + suffix)
    store = open_cli_store()
    config = {
        "dataset": name,
        "model": model,
        "experiment": experiment,
        "device": device,
        "dtype": dtype,
        "n_tasks": len(tasks),
        "target_kind": target_kind,
    }
    if experiment in GENERATED:
        from scoring.decode import RESPONSE_PREFIX

        config |= {"decoding": "greedy", "max_new_tokens": max_new_tokens, "response_prefix": RESPONSE_PREFIX}
    if experiment == "screening":
        from scoring.screening import FACTOR_COUNTS

        if factors not in FACTOR_COUNTS:
            raise InputError(f"unsupported factor count {factors}", field="factors", hint="12 or 16")
        config |= {"n_factors": factors, "order": order, "distractor_seed": 0}
    if experiment == "order-shuffle":
        config |= {"shuffle": shuffle}
    if instruction != "none":
        config |= {"instruction": instruction}
    if experiment == "api-proxy":
        from scoring.api_proxy import proxy_config

        config |= proxy_config(model)
    start_run(store, rid, config)
    from auditor.core import local_model
    from scoring.cost import recorded_session

    with recorded_session(store, rid, "litellm gateway" if experiment == "api-proxy" else device) as session:
        if experiment == "api-proxy":
            _api_proxy(store, rid, tasks, config["gateway_model"], kinds[target_kind])
            return
        lm = session.load(lambda: local_model.load_model(model, device=device, dtype=dtype))
        if experiment in GENERATED:
            _generate(store, rid, tasks, lm, kinds[target_kind], max_new_tokens, experiment)
        elif experiment == "matched":
            _matched(store, rid, tasks, lm, kinds[target_kind], token_budget)
        elif experiment == "screening":
            _screening(store, rid, pool, tasks, lm, kinds[target_kind], token_budget, config)
        else:
            _score(store, rid, tasks, lm, kinds[target_kind], token_budget, experiment == "placeholder")


def _generate(
    store: EventStore,
    rid: str,
    tasks: list[AttributionTask],
    lm: LoadedModel,
    kinds: set[str] | None,
    max_new_tokens: int,
    experiment: str,
) -> None:
    from rich.progress import Progress

    from scoring.decode import GreedyDecoder
    from scoring.runs import CONTEXTS, n_generations, run_generation

    decode = GreedyDecoder(lm.model, lm.tokenizer, max_new_tokens)
    contexts = CONTEXTS[experiment]
    with Progress(console=console, transient=False) as bar:
        job = bar.add_task(f"generating {rid}", total=n_generations(tasks, kinds, contexts))
        done, skipped = run_generation(
            store, rid, tasks, decode, lambda n: bar.advance(job, n), kinds, contexts
        )
    console.print(f"run {rid}: {done} action(s) generated, {skipped} already in the store")


def _matched(
    store: EventStore,
    rid: str,
    tasks: list[AttributionTask],
    lm: LoadedModel,
    kinds: set[str] | None,
    token_budget: int,
) -> None:

    from scoring.interventions import score_matched
    from scoring.runs import run_matched
    from scoring.scorer import TrieScorer

    scorer = TrieScorer(lm.model, token_budget=token_budget)
    score = lambda task, target: score_matched(scorer, lm.tokenizer, task, target)  # noqa: E731
    _score_targets(rid, tasks, kinds, lambda advance: run_matched(store, rid, tasks, score, advance, kinds))


def _score_targets(
    rid: str,
    tasks: list[AttributionTask],
    kinds: set[str] | None,
    run: Callable[[Callable[[int], None]], tuple[int, int]],
) -> None:
    """Run a per-target scoring loop under a progress bar over the chosen targets, then say what it did."""
    from rich.progress import Progress

    from scoring.runs import chosen

    with Progress(console=console, transient=False) as bar:
        job = bar.add_task(f"scoring {rid}", total=sum(len(chosen(t, kinds)) for t in tasks))
        scored, skipped = run(lambda n: bar.advance(job, n))
    console.print(f"run {rid}: {scored} target(s) scored, {skipped} already in the store")


def _screening(
    store: EventStore,
    rid: str,
    pool: list[AttributionTask],
    tasks: list[AttributionTask],
    lm: LoadedModel,
    kinds: set[str] | None,
    token_budget: int,
    config: dict[str, Any],
) -> None:
    """Distractors come from the whole dataset (``pool``), so --limit does not change a context."""

    from scoring.runs import run_per_target, screening_event
    from scoring.scorer import TrieScorer
    from scoring.screening import score_screening

    scorer = TrieScorer(lm.model, token_budget=token_budget)
    n, order, seed = config["n_factors"], config["order"], config["distractor_seed"]

    def event(task, target):  # type: ignore[no-untyped-def]
        labels, scores = score_screening(scorer, lm.tokenizer, task, target, pool, n, order, seed)
        return screening_event(rid, task, target, labels, scores)

    _score_targets(
        rid, tasks, kinds, lambda advance: run_per_target(store, rid, tasks, event, advance, kinds)
    )


def _score(
    store: EventStore,
    rid: str,
    tasks: list[AttributionTask],
    lm: LoadedModel,
    kinds: set[str] | None,
    token_budget: int,
    placeholder: bool = False,
) -> None:
    """Every subset of each target; ``placeholder`` shows omitted factors as their placeholders."""
    from scoring.construction import placeholder_parts, score_placeholder
    from scoring.prompts import prompt_parts
    from scoring.runs import run_coalition
    from scoring.scorer import TrieScorer, tokenize_parts

    scorer = TrieScorer(lm.model, token_budget=token_budget)

    def score_task(task, todo):  # type: ignore[no-untyped-def]
        chosen = [task.targets[i] for i in todo]
        if placeholder:
            return score_placeholder(scorer, tokenize_parts(lm.tokenizer, placeholder_parts(task, chosen)))
        return scorer.score(tokenize_parts(lm.tokenizer, prompt_parts(task, chosen)))

    _score_targets(
        rid, tasks, kinds, lambda advance: run_coalition(store, rid, tasks, score_task, advance, kinds)
    )


@score_app.command("runs")
def runs(as_json: bool = typer.Option(False, "--json")) -> None:
    """List scoring runs with their cost record: result records, model requests, time and device."""
    from scoring.cost import all_costs

    costs = all_costs(open_cli_store())
    if as_json:
        print_json([{**asdict(c), "requests_per_second": c.requests_per_second} for c in costs])
        return
    print_table(
        "scoring runs (model requests: one per subset prompt or generated action, fixed by the design)",
        ["run", "experiment", "model", "records", "model requests", "scoring time", "model load", "device"],
        [
            [
                c.run_id,
                c.experiment,
                c.model,
                c.records,
                f"{c.requests:,}",
                "not recorded" if c.seconds is None else f"{c.seconds:,.1f} s",
                "" if c.load_seconds is None else f"{c.load_seconds:,.1f} s",
                ", ".join(c.devices),
            ]
            for c in costs
        ],
    )


@score_app.command("report")
def report(
    run_id: str = typer.Argument(..., help="Run id (see `auditor score runs`)."),
    out: Path = typer.Option(None, "--out", help="Folder for CSV and PNG (default: reports/score/<run>)."),
    score_field: str = typer.Option(
        "sum_logodds", "--score-field", help="sum_logodds, mean_logodds, sum_logprob."
    ),
    top_k: str = typer.Option(
        "50", "--top-k", help="Terms kept per target: 20, 50, 80, all, or sweep (all four)."
    ),
    shares: str = typer.Option(
        "primary",
        "--shares",
        help="primary (s_frac, s_any), split (invalid-only / invalid–valid / invalid–neutral), "
        "signed (s_frac of positive and of negative mass), or all.",
    ),
    resamples: int = typer.Option(20_000, "--resamples", min=100, help="Cluster-bootstrap resamples."),
    coalition_run: str = typer.Option(
        None,
        "--coalition-run",
        help="Generation and degradation runs: a coalition run of the same dataset and model, for the "
        "rescue-prediction and degradation-prediction studies. Construction-control runs: the original "
        "coalition run to pair with (default: that dataset and model's default coalition run).",
    ),
    controls: bool = typer.Option(
        False,
        "--controls",
        help="Coalition-shaped runs: add the controls computed from stored scores (content-type-matched "
        "null; salience-, value-bearing- and role-matched controls; coarsening by source, source-type, type).",
    ),
    control_dataset: str = typer.Option(
        None,
        "--dataset",
        help="--controls: the .jsonl file the run scored, where it was not a registered dataset.",
    ),
    direct_run: str = typer.Option(
        None,
        "--direct-run",
        help="Elicitation runs (elicit-yesno, elicit-rating, elicit-choice): the direct coalition run of "
        "the same dataset and model, for the correlation of per-target invalid shares.",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """One run's summary: Table-6-style coalition shares, the generated-action tables, or Table 1.

    A coalition run reports observed, null and excess shares per estimand and target kind; a
    generation run reports accuracy, discordance and transitions, competitor matching, the
    authority flip and rescue, each rate with its denominator; a degradation run reports c_F,
    c_M, c_C, mixed–clean discordance and the retained-invalid pattern; a guardrail run reports
    competition errors and source sensitivity with and without the authority policy and their
    policy − plain change; a matched run reports mean G_a,
    D_a, δ_S, δ_C and ΔΔ per target kind with source-task intervals. A construction-control run
    (order-shuffle, placeholder, no-invalid) adds its paired comparison with the original coalition
    run, and --controls adds the controls computed from stored scores.
    """
    from auditor.surfaces.cli.score_report import report_run

    report_run(
        open_cli_store(),
        run_id,
        out or Path("reports/score") / run_id,
        score_field=score_field,
        top_k=top_k,
        shares=shares,
        resamples=resamples,
        coalition_run=coalition_run,
        controls=controls,
        control_dataset=control_dataset,
        direct_run=direct_run,
        as_json=as_json,
    )


def _api_proxy(
    store: EventStore, rid: str, tasks: list[AttributionTask], model: str, kinds: set[str] | None
) -> None:
    """One event per target: every prompt variant in the full and the no-invalid context."""
    from scoring.api_proxy import NOT_TEACHER_FORCED, first_token_logprobs, proxy_event
    from scoring.runs import run_per_target

    console.print(NOT_TEACHER_FORCED)
    ask = lambda chat: first_token_logprobs(model, chat)  # noqa: E731
    event = lambda task, target: proxy_event(rid, task, target, ask)  # noqa: E731
    _score_targets(
        rid, tasks, kinds, lambda advance: run_per_target(store, rid, tasks, event, advance, kinds)
    )


def register(app: typer.Typer) -> None:
    from auditor.surfaces.cli.relabel_cmd import relabel_app

    score_app.add_typer(relabel_app, name="relabel")
    app.add_typer(score_app, name="score")
