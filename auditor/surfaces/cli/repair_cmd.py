"""`auditor repair propose|review|retest|decide|show|run`: the diagnosis-and-repair pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from auditor.core.errors import InputError
from auditor.surfaces.cli.common import (
    JSON_OUTPUT,
    console,
    open_cli_store,
    output_target,
    print_json,
    print_table,
    write_atomic,
)
from schemas import AuditReport


def _report(store: Any, ref: str):  # -> schemas.AuditReport
    from auditor.core.store.reports import load_report

    path = Path(ref)
    if not path.is_file():
        return load_report(store, ref)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=ref, line=exc.lineno) from exc
    try:
        return AuditReport.model_validate(data.get("report", data) if isinstance(data, dict) else data)
    except ValueError as exc:
        raise InputError(f"not a V3 audit report: {str(exc).splitlines()[0]}", path=ref) from exc


def _params(values: list[str], items: list[Any]) -> dict[str, dict[str, Any]]:
    """``control.key=value`` or ``key=value`` (for every chosen control that has the key); YAML values."""
    import yaml

    from repair.catalogue import catalogue_control

    out: dict[str, dict[str, Any]] = {}
    for raw in values or []:
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise InputError(f"expected KEY=VALUE, got {raw!r}", field="--param")
        parsed = yaml.safe_load(value)
        control, _, name = key.rpartition(".")
        targets = (
            [control]
            if control
            else [i.control for i in items if name in catalogue_control(i.control).defaults]
        )
        if not targets:
            raise InputError(f"no chosen control has a parameter {name!r}", field="--param")
        for t in targets:
            out.setdefault(t, {})[name] = parsed
    return out


def _show_state(state: Any, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "repair_id": state.repair_id,
                "world": state.context.world,
                "rounds": [
                    {
                        "patch": r.patch.model_dump(mode="json"),
                        "scope": r.scope.model_dump(mode="json"),
                        "review": r.review.model_dump(mode="json") if r.review else None,
                    }
                    for r in state.rounds
                ],
                "retest": state.retest.model_dump(mode="json") if state.retest else None,
                "decision": state.decision.model_dump(mode="json") if state.decision else None,
                "pr": state.pr.model_dump(mode="json") if state.pr else None,
            }
        )
        return
    console.print(
        f"repair [bold]{state.repair_id}[/bold] ({state.context.world}, report {state.context.report_id})"
    )
    for r in state.rounds:
        rows = [[c.path, json.dumps(c.before), json.dumps(c.after), c.plan_item_id] for c in r.patch.changes]
        print_table(
            f"round {r.patch.round}: patch {r.patch.patch_id}", ["path", "before", "after", "plan item"], rows
        )
        scope = "ok" if r.scope.ok else "REFUSED: " + ", ".join(r.scope.violations)
        console.print(f"  scope: {scope}")
        if r.review:
            for name, d in r.review.dimensions().items():
                console.print(f"  {name}: {d.verdict.value} — {d.rationale}")
            console.print(f"  review: {'approved' if r.review.approved else 'rejected'}")
    if state.retest:
        _show_retest(state.retest)
    if state.decision:
        d = state.decision
        console.print(
            f"decision: {'ACCEPTED' if d.accepted else 'REJECTED'} (ScopeOK {d.scope_ok}, ReviewOK {d.review_ok}, "
            f"AuditPass {d.audit_pass}, Retain ok {d.retain_ok})"
            + ("; " + "; ".join(d.reasons) if d.reasons else "")
        )
    if state.pr:
        console.print(
            f"PR proposal: branch {state.pr.branch} commit {state.pr.commit[:12]} in {state.pr.repo}"
        )


def _show_retest(r: Any) -> None:
    t, b = r.target, r.baseline_target
    retain = "undefined" if r.retain is None else f"{r.retain:.3f}"
    console.print(
        f"retest: target {t.successes}/{t.total} ({t.low:.1%}–{t.high:.1%}) vs baseline {b.successes}/{b.total}; "
        f"utility {r.utility_after:.3f} / {r.utility_baseline:.3f} → Retain {retain}; "
        f"realized {r.realized_findings}, beyond-label {len(r.beyond_label)}; AuditPass {r.audit_pass}"
    )


REPAIR_ID = typer.Argument(..., metavar="REPAIR_ID")

repair_app = typer.Typer(
    help="Repair: plan → patch → review → fresh retest → decision → PR.", no_args_is_help=True
)


@repair_app.command("propose")
def propose(
    report: str = typer.Argument(..., metavar="REPORT", help="A report JSON file or a stored report id."),
    workflow: Path = typer.Option(..., "--workflow", help="The audited workflow configuration (YAML)."),
    policy: Path = typer.Option(None, "--policy", help="The declared-invariants policy the audit used."),
    item: list[str] = typer.Option(None, "--item", help="Plan item(s) to implement (default: applicable)."),
    param: list[str] = typer.Option(None, "--param", help="Control parameter, [control.]key=value."),
    model: str = typer.Option(
        None,
        "--model",
        help="Use the LLM Repair Agent with this litellm model (default: rules catalogue).",
    ),
    out: Path = typer.Option(None, "--out", help="Also write the patched workflow YAML here."),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Turn a report's repair plan into a scope-checked patch (rules Repair Agent)."""
    from repair.propose import select_items
    from repair.service import audit_context, open_repair, propose_step
    from repair.stream import load_repair
    from worlds import Workflow

    if out is not None:
        output_target(out)  # refused before the repair is stored
    store = open_cli_store()
    rep = _report(store, report)
    wf = Workflow.load(workflow)
    items = select_items(rep, wf, item or None)
    repair_id = open_repair(store, audit_context(store, rep, wf, items, policy_path=policy))
    state = propose_step(store, repair_id, _params(param, items), model=model)
    if out is not None:
        write_atomic(out, load_repair(store, repair_id).latest.patched_yaml)
    _show_state(state, as_json)


@repair_app.command("review")
def review(
    repair_id: str = REPAIR_ID,
    max_rounds: int = typer.Option(3, min=1, help="Rounds of rejection → re-proposal."),
    reviewer_model: str = typer.Option(
        None, "--reviewer-model", help="An LLM Reviewer through litellm (default: the rules Reviewer)."
    ),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """The independent Reviewer on four dimensions; rejections go back to the Repair Agent."""
    from repair.service import review_step

    _show_state(review_step(open_cli_store(), repair_id, max_rounds, reviewer_model), as_json)


@repair_app.command("retest")
def retest(
    repair_id: str = REPAIR_ID,
    episodes: int = typer.Option(20, min=1, help="Fresh-identity episodes."),
    seed: int = typer.Option(10_000, help="First retest seed."),
    condition: list[str] = typer.Option(None, "--condition", "-c", help="Conditions (default: canonical)."),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Run the approved artifact on fresh identities, audit each episode, judge by ground truth."""
    from repair.retest import RetestPlan
    from repair.service import retest_step

    result = retest_step(open_cli_store(), repair_id, RetestPlan(episodes, seed, tuple(condition or ())))
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        _show_retest(result)


@repair_app.command("decide")
def decide(
    repair_id: str = REPAIR_ID,
    repo: Path = typer.Option(None, "--repo", help="Workflow-config git repository for the PR proposal."),
    file: str = typer.Option(
        None, "--file", help="The workflow file in the repository (default: by digest)."
    ),
    pr_out: Path = typer.Option(None, "--pr-out", help="Also write the PR description (Markdown) here."),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Accept exactly when all four conditions hold; an accepted repair becomes a PR proposal."""
    from repair.service import decide_step, pr_step
    from repair.stream import load_repair

    if pr_out is not None:
        output_target(pr_out)  # refused before the decision is stored
    store = open_cli_store()
    decision = decide_step(store, repair_id)
    if decision.accepted and repo is not None:
        proposal = pr_step(store, repair_id, repo, file)
        if pr_out is not None:
            write_atomic(pr_out, proposal.description)
    _show_state(load_repair(store, repair_id), as_json)
    if not decision.accepted:
        raise typer.Exit(1)


@repair_app.command("show")
def show(
    repair_id: str = REPAIR_ID,
    as_json: bool = JSON_OUTPUT,
) -> None:
    """A repair's recorded steps, rebuilt from its stream."""
    from repair.stream import load_repair

    _show_state(load_repair(open_cli_store(), repair_id), as_json)


@repair_app.command("run")
def run(
    world: str = typer.Argument(..., metavar="WORLD", help="A1, B1, C1, D1 or F1."),
    repo: Path = typer.Option(Path("workflow-configs"), "--repo", help="Workflow-config git repository."),
    audit_episodes: int = typer.Option(20, min=1, help="Scripted episodes in the audit cohort."),
    episodes: int = typer.Option(20, min=1, help="Fresh-identity retest episodes."),
    seed: int = typer.Option(10_000, help="First retest seed."),
    policy: Path = typer.Option(
        None,
        "--policy",
        help="Declared invariants for the audits (default: examples/policies/<world>.yaml).",
    ),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """End to end, offline: scripted cohort → audit → plan → patch → review → retest → decision → PR."""
    from repair.pipeline import run_world
    from repair.retest import RetestPlan

    result = run_world(
        open_cli_store(),
        world,
        repo,
        audit_episodes,
        retest=RetestPlan(episodes, seed),
        policy_path=policy,
    )
    _show_state(result.state, as_json)
    if not result.decision.accepted:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(repair_app, name="repair")
