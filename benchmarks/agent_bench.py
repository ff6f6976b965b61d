"""Benchmark: the Auditor Agent per graph mode (annotated, topology, none) on a world cohort.

Per audit: model calls, input and output tokens, tool calls, wall time, and the share of submitted
evidence units that resolve before and after the revise loop; then the graph ablation's paired arm
contrasts under a condition-blind reviewer (discovery, chain score, tokens and time with a
two-sided sign test). The default model is the local SmolLM2 (offline, small and weak: the figures
measure the loop's cost and the validator's hold on a weak model, not audit quality).

Run: python benchmarks/agent_bench.py [--per-world 1] [--worlds A1,D1] [--model local/smollm2]
     [--reviewer local/smollm2] [--max-tool-calls 6] [--max-output-tokens 192]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.progress import Progress

from auditor.agent.ablation import run_ablation
from auditor.agent.loop import Budget
from auditor.store import open_store
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
    args = parser.parse_args()
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
