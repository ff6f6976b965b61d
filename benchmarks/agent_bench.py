"""Benchmark: the Auditor Agent per graph mode (annotated, topology, none) on a world cohort.

Per audit: model calls, input and output tokens, tool calls, wall time, and the share of submitted
evidence units that resolve before and after the revise loop; then the graph ablation's paired arm
contrasts under a condition-blind reviewer (discovery, chain score, tokens and time with a
two-sided sign test). The default model is the local SmolLM2 (offline, small and weak: the figures
measure the loop's cost and the validator's hold on a weak model, not audit quality).

Run: python benchmarks/agent_bench.py [--per-world 1] [--worlds A1,D1] [--model local/smollm2]
     [--reviewer local/smollm2] [--max-tool-calls 6] [--max-output-tokens 192]

With --wall-budget, the wall-time budget's figure instead: one real trace (default: the frozen MAST
MetaGPT record) audited with the local model at each --budgets value, cold (the model's process
not yet loaded) and warm, printing the seconds asked against the audit's measured wall time (from
the start of run_agent_audit, after litellm's and LangGraph's one-time imports), the prompt tokens
cut to fit and how the audit ended; --plot FILE draws it (PNG).
     python benchmarks/agent_bench.py --wall-budget [--budgets 1,2,4,8,16] [--trace PATH] [--plot FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.progress import Progress

from auditor.audit.agent.ablation import run_ablation
from auditor.audit.agent.loop import Budget
from auditor.core.llm import complete
from auditor.core.store import open_store
from schemas import GraphMode, LabelsRecord, Trace
from worlds import list_worlds, quick_cohort


def cohort(worlds: list[str], per_world: int, seed: int) -> list[tuple[Trace, LabelsRecord]]:
    """Per world, ``per_world`` episodes where the seeded target fired and as many where it did not."""
    out = []
    for name in worlds:
        episodes = quick_cohort(name, 40, seed=seed).episodes
        pos = [e for e in episodes if e.outcome.target_fired][:per_world]
        neg = [e for e in episodes if not e.outcome.target_fired][:per_world]
        out += [(e.trace(), e.labels()) for e in pos + neg]
    return out


def share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "—"


MAST_METAGPT = (
    Path(__file__).resolve().parents[1] / "tests/fixtures/real/mast/09_Round2_MetaGPT_ProgramDev.json"
)


def timed_audit(trace: Trace, seconds: float, store: Any) -> tuple[float, int, str]:
    """One local audit under ``seconds``: its wall time, the prompt tokens cut, how it ended."""
    from auditor.audit.agent import run_agent_audit
    from auditor.audit.agent.loop import audit_stream

    started = time.perf_counter()
    report = run_agent_audit(trace, "local/smollm2", store=store, budget=Budget(max_seconds=seconds))
    wall = time.perf_counter() - started
    events = store.read_stream(audit_stream("aud-" + report.report_id[4:]))
    cut = sum(e.payload.get("prompt_cut_tokens", 0) for e in events if e.type == "ModelCalled")
    ended = next(
        (n.split(";")[0].split(":")[0] for n in report.notes if n.startswith("budget exhausted")), "finished"
    )
    ended += " mid-reply" if any("mid-reply" in n for n in report.notes) else ""
    return wall, cut, ended


def wall_budget_figure(path: Path, budgets: list[float], plot: Path | None) -> None:
    """Seconds asked vs measured, cold and warm (issue 31 item 9)."""
    from auditor.audit.agent.loop import load_libraries
    from auditor.audit.review import read_traces
    from auditor.core.local_worker import GRACE_S, worker

    [(trace, _, importer)] = list(read_traces(path, "auto"))
    load_libraries()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for state in ("cold", "warm"):
            for seconds in budgets:
                if state == "cold":
                    worker("smollm2").stop()
                else:  # loaded once, outside any budget
                    complete("local/smollm2", [{"role": "user", "content": "Hello"}], max_tokens=1)
                store = open_store(f"sqlite:///{tmp}/{state}-{seconds:g}.db")
                rows.append((state, seconds, *timed_audit(trace, seconds, store)))
                store.close()
    print(
        f"\n{path.name} ({importer}, {len(trace.steps)} steps), local/smollm2, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}; stated tolerance: asked + {GRACE_S + 0.5:g} s"
    )
    print(f"{'model':6} {'asked s':>8} {'measured s':>11} {'over s':>7} {'prompt cut':>11}  ended")
    for state, seconds, wall, cut, ended in rows:
        print(f"{state:6} {seconds:8g} {wall:11.2f} {wall - seconds:+7.2f} {cut:11d}  {ended}")
    if plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 4))
        ax.plot(budgets, budgets, color="grey", linestyle="--", label="asked")
        ax.fill_between(budgets, budgets, [b + GRACE_S + 0.5 for b in budgets], color="grey", alpha=0.15,
                        label="stated tolerance")  # fmt: skip
        for state, marker in (("cold", "o"), ("warm", "s")):
            ax.plot(budgets, [r[2] for r in rows if r[0] == state], marker=marker, label=f"measured, {state}")
        ax.set(
            xlabel="--max-seconds asked", ylabel="audit wall time (s)", title="Auditor Agent, local/smollm2"
        )
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        print(f"wrote {plot}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worlds", default=",".join(list_worlds()))
    parser.add_argument("--per-world", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="local/smollm2")
    parser.add_argument("--reviewer", default="local/smollm2")
    parser.add_argument("--max-tool-calls", type=int, default=6)
    parser.add_argument("--max-output-tokens", type=int, default=192)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--wall-budget", action="store_true", help="the wall-time budget's figure instead")
    parser.add_argument("--budgets", default="1,2,4,8,16", help="--wall-budget: seconds asked")
    parser.add_argument("--trace", type=Path, default=MAST_METAGPT, help="--wall-budget: the trace")
    parser.add_argument("--plot", type=Path, help="--wall-budget: write the figure here (PNG)")
    args = parser.parse_args()
    if args.wall_budget:
        wall_budget_figure(args.trace, [float(b) for b in args.budgets.split(",")], args.plot)
        return
    bundles = cohort(args.worlds.split(","), args.per_world, args.seed)
    budget = Budget(
        max_tool_calls=args.max_tool_calls,
        max_seconds=args.max_seconds,
        max_output_tokens=args.max_output_tokens,
    )
    with tempfile.TemporaryDirectory() as tmp, Progress() as progress:
        store = open_store(f"sqlite:///{tmp}/bench.db")
        task = progress.add_task("audits", total=len(bundles) * len(GraphMode))
        runs, _reviews, rows = run_ablation(
            bundles,
            args.model,
            args.reviewer,
            store,
            budget=budget,
            progress=lambda _: progress.advance(task),
        )
    print(f"\n{len(bundles)} trajectories ({args.worlds}), model {args.model}, reviewer {args.reviewer}")
    print(
        f"{'mode':10} {'calls':>6} {'in tok':>8} {'out tok':>8} {'tools':>6} {'wall s':>7}  "
        f"{'units resolve: first submission':>32}  {'after revise':>14}  findings"
    )
    for mode, by_trace in runs.items():
        rs = list(by_trace.values())
        print(
            f"{mode.value:10} {mean(r.model_calls for r in rs):6.1f} {mean(r.input_tokens for r in rs):8.0f} "
            f"{mean(r.output_tokens for r in rs):8.0f} {mean(r.tool_calls for r in rs):6.1f} "
            f"{mean(r.wall_s for r in rs):7.1f}  "
            f"{share(sum(r.resolved_first for r in rs), sum(r.units_first for r in rs)):>32}  "
            f"{share(sum(r.resolved_final for r in rs), sum(r.units_final for r in rs)):>14}  "
            f"{sum(len(r.report.findings) for r in rs)}"
        )
    print(
        f"\n{'pair':22} {'pos':>4} {'found a/b':>10} {'only a/b':>9} {'chain Δ':>8} "
        f"{'tokens a/b (median Δ, p)':>34} {'wall s a/b (median Δ, p)':>32}"
    )
    for r in rows:
        chain = f"{r.chain_mean_diff:+.2f}" if r.chain_mean_diff is not None else "—"
        print(
            f"{r.arm_a + ' vs ' + r.arm_b:22} {r.positives:4d} {f'{r.found_a}/{r.found_b}':>10} "
            f"{f'{r.found_only_a}/{r.found_only_b}':>9} {chain:>8} "
            f"{f'{r.tokens_mean_a:.0f}/{r.tokens_mean_b:.0f} ({r.tokens_median_diff or 0:+.0f}, {r.tokens_p:.2g})':>34} "
            f"{f'{r.wall_mean_a:.1f}/{r.wall_mean_b:.1f} ({r.wall_median_diff or 0:+.1f}, {r.wall_p:.2g})':>32}"
        )


if __name__ == "__main__":
    main()
