"""Who&When failure attribution: agent- and step-level accuracy per strategy, subset and setting,
beside the published Table 1 (Zhang et al., ICML 2025), with Wilson 95% intervals.

    python benchmarks/whowhen_eval.py DIR [--strategies rules,counterfactual] [--settings with,without]
        [--model M] [--csv predictions.csv] [--halves]

DIR holds ``algorithm-generated/`` and ``hand-crafted/`` (the Who&When JSON files). The strategies
see only the trace (and, in the "with" setting, the correct answer); labels are read after they
answer. ``--halves`` also reports odd- and even-numbered files apart: the rules carry no fitted
parameters, and the two halves show how stable their figures are on unseen traces.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from auditor.attribution import load_strategy
from auditor.attribution.evaluation import (
    PUBLISHED,
    TOLERANCES,
    Outcome,
    Summary,
    best_published,
    load_cases,
    score,
    summarise,
)
from scoring.stats import wilson_rate


def fmt(hits: int, n: int) -> str:
    r = wilson_rate(hits, n)
    return f"{100 * r.value:5.1f} [{100 * r.low:4.1f}–{100 * r.high:4.1f}]"


def print_table(summaries: list[Summary], title: str) -> None:
    print(f"\n== {title}")
    print(
        f"{'strategy':16} {'setting':8} {'subset':20} {'n':>3}  {'agent % [95% CI]':22} {'step % [95% CI]':22}"
        + "".join(f" ±{t}%  " for t in TOLERANCES)
        + "  bar (agent/step)"
    )
    for s in sorted(summaries, key=lambda s: (s.strategy, s.setting, s.subset)):
        bar_a, bar_s = best_published(s.subset)
        a, st = 100 * s.agent_hits / s.n, 100 * s.step_hits / s.n
        mark = "BEATS" if a > bar_a and st > bar_s else "below"
        tol = "".join(f" {100 * s.within[t] / s.n:5.1f}" for t in TOLERANCES)
        print(
            f"{s.strategy:16} {s.setting:8} {s.subset:20} {s.n:3d}  {fmt(s.agent_hits, s.n):22} "
            f"{fmt(s.step_hits, s.n):22}{tol}   {bar_a:.2f}/{bar_s:.2f} {mark}"
        )
    print("\npublished Table 1 (GPT-4o; agent % / step %):")
    for method, cells in PUBLISHED.items():
        row = "  ".join(
            f"{setting}/{subset}: {a:5.2f}/{s:5.2f}" for (setting, subset), (a, s) in cells.items()
        )
        print(f"  {method:14} {row}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--strategies", default="rules")
    ap.add_argument("--settings", default="with,without")
    ap.add_argument("--model", default=None, help="model for counterfactual / LLM-judge strategies")
    ap.add_argument("--csv", type=Path, default=None, help="per-trace predictions")
    ap.add_argument("--halves", action="store_true", help="also report odd/even-numbered files apart")
    ap.add_argument("--limit", type=int, default=None, help="first N files per subset (smoke runs)")
    args = ap.parse_args(argv)

    cases = list(load_cases(args.dir))
    if args.limit:
        cases = [
            c
            for sub in {c.subset for c in cases}
            for c in [x for x in cases if x.subset == sub][: args.limit]
        ]
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    outcomes: list[Outcome] = []
    for name in [s.strip() for s in args.strategies.split(",") if s.strip()]:
        strategy = load_strategy(name)
        started = time.perf_counter()
        for setting in settings:
            for case in cases:
                gt = case.ground_truth if setting == "with" else None
                attribution = strategy.attribute(case.trace, ground_truth=gt, model=args.model)
                outcomes.append(score(case, attribution, setting))
        print(
            f"{name}: {len(cases)} traces x {len(settings)} settings in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    print_table(summarise(outcomes), f"Who&When, {len(cases)} traces ({args.dir})")
    if args.halves:
        for parity, label in ((1, "odd-numbered files"), (0, "even-numbered files")):
            half = [o for o in outcomes if int(Path(o.case).stem) % 2 == parity]
            print_table(summarise(half), label)
    if args.csv:
        with args.csv.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(outcomes[0].row()))
            writer.writeheader()
            writer.writerows(o.row() for o in outcomes)
        print(f"\npredictions: {args.csv} ({len(outcomes)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
