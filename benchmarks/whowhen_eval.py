"""Who&When failure attribution: agent- and step-level accuracy per strategy, subset and setting,
beside the published Table 1 (Zhang et al., ICML 2025), with Wilson 95% intervals.

    python benchmarks/whowhen_eval.py DIR [--strategies rules,counterfactual] [--settings with,without]
        [--model M] [--csv predictions.csv] [--halves]

DIR holds ``algorithm-generated/`` and ``hand-crafted/`` (the Who&When JSON files). The strategies
see only the trace (and, in the "with" setting, the correct answer); labels are read after they
answer. ``--halves`` also reports odd- and even-numbered files apart.

The ``rules`` strategy was developed on the developer half of Who&When (the 88 files in
``shared/data/whowhen``; the other half of the corpus is held back for independent evaluation).
On those files its figures are in-sample; the odd/even split lies inside the developer half, so it
shows how stable the figures are, not how they generalise. The report says how many of DIR's files
are from the developer half.

A cell is marked against the best published figure of its subset by the lower bound of its Wilson
95% interval (yes when the lower bound is above the published figure), never by the point
estimate alone.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.attribution import load_strategy
from auditor.audit.attribution.evaluation import (
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

# The Who&When files the rules were developed on (upstream file numbers per subset).
DEVELOPER_HALF: dict[str, frozenset[int]] = {
    "algorithm-generated": frozenset(
        {6, 7, 10, 11, 12, 15, 16, 17, 18, 29, 32, 34, 35, 36, 38, 39, 40, 46, 47, 49, 50, 51, 52, 53, 54,
         56, 57, 61, 62, 64, 68, 70, 73, 74, 75, 77, 78, 81, 82, 83, 84, 85, 87, 89, 91, 93, 94, 95, 98,
         103, 105, 106, 109, 111, 113, 114, 116, 118, 125}
    ),
    "hand-crafted": frozenset(
        {2, 3, 4, 6, 9, 11, 13, 14, 18, 20, 21, 23, 25, 29, 31, 32, 36, 39, 41, 42, 43, 46, 47, 52, 53, 55,
         56, 57, 58}
    ),
}  # fmt: skip


def in_developer_half(case: str) -> bool:
    """Whether a case (``subset/NUMBER.json``) is one of the files the rules were developed on."""
    subset, _, name = case.partition("/")
    stem = Path(name).stem
    return stem.isdigit() and int(stem) in DEVELOPER_HALF.get(subset, frozenset())


def provenance(cases: list[str]) -> str:
    """One line saying how much of the evaluated data the rules were developed on."""
    dev = sum(in_developer_half(c) for c in cases)
    total = sum(len(v) for v in DEVELOPER_HALF.values())
    if dev == len(cases):
        where = "all of them: in-sample figures for the rules"
    elif dev == 0:
        where = "none of them: held-out figures"
    else:
        where = "a mix: the rules' figures here are partly in-sample"
    return (
        f"data: {dev} of {len(cases)} files are from the developer half of Who&When ({total} files the "
        f"rules were developed on; the other half is held back) — {where}"
    )


def clears(hits: int, n: int, bar: float) -> bool:
    """Whether the Wilson 95% lower bound (in %) is above a published figure."""
    return 100 * wilson_rate(hits, n).low > bar


def fmt(hits: int, n: int) -> str:
    r = wilson_rate(hits, n)
    return f"{100 * r.value:5.1f} [{100 * r.low:4.1f}–{100 * r.high:4.1f}]"


def print_table(summaries: list[Summary], title: str) -> None:
    print(f"\n== {title}")
    print(
        f"{'strategy':16} {'setting':8} {'subset':20} {'n':>3}  {'agent % [95% CI]':22} {'step % [95% CI]':22}"
        + "".join(f" ±{t}%  " for t in TOLERANCES)
        + "  bar (agent/step)  Wilson lower bound > bar? (agent/step)"
    )
    for s in sorted(summaries, key=lambda s: (s.strategy, s.setting, s.subset)):
        bar_a, bar_s = best_published(s.subset)
        mark = "/".join(
            "yes" if clears(hits, s.n, bar) else "no"
            for hits, bar in ((s.agent_hits, bar_a), (s.step_hits, bar_s))
        )
        tol = "".join(f" {100 * s.within[t] / s.n:5.1f}" for t in TOLERANCES)
        print(
            f"{s.strategy:16} {s.setting:8} {s.subset:20} {s.n:3d}  {fmt(s.agent_hits, s.n):22} "
            f"{fmt(s.step_hits, s.n):22}{tol}   {bar_a:.2f}/{bar_s:.2f}  {mark}"
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
    print(provenance([c.name for c in cases]))
    print_table(summarise(outcomes), f"Who&When, {len(cases)} traces ({args.dir})")
    if args.halves:
        print("\nodd and even halves: both inside the data above (a stability check, not a held-out test)")
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
