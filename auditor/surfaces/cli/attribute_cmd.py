"""`auditor attribute TRACE`: which agent caused the failure, and at which step.

TRACE is a trace file in any known format (every trace in it is attributed), or the id of a trace
in the store. Only the trace's header and steps reach the strategy; sidecar labels are never read.

The default strategy is the review's own: ``auditor review --outcome failed`` runs the detectors
(under ``--policy`` where given) and attributes the failure from the rules' signals and the
findings (``auditor.audit.incident``); ``attribute`` calls that same code, so the two never disagree on
one input. The other strategies (counterfactual, the LLM judges) stand on their own.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import INPUT_FORMAT, console, open_cli_store, print_json, print_table
from schemas import Trace


def _traces(target: str, input_format: str) -> list:  # list[schemas.Trace]
    path = Path(target)
    if path.exists():
        from ingest import open_traces

        return [Trace(header=t.header, steps=list(t.steps())) for t in open_traces(path, input_format)]
    if any(sep in target for sep in ("/", "\\")) or target.endswith((".json", ".jsonl")):
        raise InputError("trace file not found", path=target, hint="give a trace file or a stored trace id")
    from auditor.core.store.traces import load_trace

    return [load_trace(open_cli_store(), target)]


def _review_attribution(trace, policy):  # type: ignore[no-untyped-def]  # -> schemas.failure.Attribution
    """The attribution ``review --outcome failed`` files for ``trace`` under ``policy``."""
    from auditor.audit.engine import rules_audit

    report, _ = rules_audit(trace, policy=policy, outcome="failed")
    assert report.attribution is not None  # a failed run is always attributed
    return report.attribution


def _print(att, trace) -> None:  # type: ignore[no-untyped-def]  # Attribution, schemas.Trace
    model = f", model {att.model}" if att.model else ""
    console.print(Text.assemble((att.trace_id, "bold"), f"  strategy {att.strategy}{model}"), highlight=False)
    if att.agent is None:
        console.print("[yellow]no attribution[/yellow] (the strategy found no candidate)")
    else:
        when = next((s.timestamp for s in trace.steps if s.step_id == att.step_id), None)
        line = Text.assemble(
            "responsible agent: ", (att.agent, "bold"), "   decisive step: ", (str(att.step_id), "bold")
        )
        line.append(f" on {when}" if when else "")
        console.print(line, highlight=False)
    print_table(
        "agents",
        ["#", "agent", "confidence", "steps"],
        [
            [i + 1, a.agent, f"{a.confidence:.2f}", ", ".join(a.steps[:5])]
            for i, a in enumerate(att.agents[:5])
        ],
    )
    print_table(
        "steps", ["#", "step", "agent", "confidence", "signals"],
        [[i + 1, c.step_id, c.agent, f"{c.confidence:.2f}", "; ".join(c.signals)[:120]]
         for i, c in enumerate(att.steps[:8])],
    )  # fmt: skip
    for c in att.steps[:3]:
        for u in c.evidence:
            console.print(f"   [dim]{u.step_id} {u.edge_ref}[/dim] “{u.quote}”", highlight=False)
    for note in att.notes:
        console.print(f"[yellow]note:[/yellow] {note}", highlight=False)


def attribute(
    trace: str = typer.Argument(..., help="A trace file (any known format) or a stored trace id."),
    strategy: str = typer.Option(
        "rules",
        "--strategy",
        "-s",
        help="rules | counterfactual | all_at_once | step_by_step | binary_search | ensemble",
    ),
    model: str = typer.Option(
        None,
        "--model",
        help="counterfactual: local model name or directory; judges: a litellm model name",
    ),
    ground_truth: str = typer.Option(
        None, "--ground-truth", help="The correct answer, when known (the 'with ground truth' setting)."
    ),
    policy: Path = typer.Option(
        None, "--policy", help="Declared invariants (YAML), as review takes them (rules strategy)."
    ),
    input_format: str = INPUT_FORMAT,
    as_json: bool = typer.Option(False, "--json", help="Print the attribution(s) as JSON."),
) -> None:
    """Name the responsible agent and the decisive step, with ranked candidates and evidence.

    With the rules strategy (the default) this is the attribution that 'auditor review
    --outcome failed' files, policy findings included."""
    from auditor.audit.attribution import attribute as run_attribution
    from auditor.audit.attribution import load_strategy

    load_strategy(strategy)  # an unknown name fails before any trace is read
    if strategy != "rules" and policy is not None:
        raise InputError(
            f"--policy applies to the rules strategy, not {strategy!r}",
            field="--policy",
            hint="drop --policy, or use --strategy rules (the review's attribution)",
        )
    if strategy == "rules":
        from auditor.audit.policy import load_policy

        loaded = load_policy(policy) if policy is not None else None
    traces = _traces(trace, input_format)
    if strategy == "rules":
        results = [_review_attribution(t, loaded) for t in traces]
    else:
        results = [run_attribution(t, strategy, ground_truth=ground_truth, model=model) for t in traces]
    if as_json:
        data = [r.model_dump(mode="json") for r in results]
        print_json(data[0] if len(data) == 1 else data)
        return
    for t, r in zip(traces, results, strict=True):
        _print(r, t)


def register(app: typer.Typer) -> None:
    app.command("attribute")(attribute)
