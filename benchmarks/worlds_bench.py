"""Benchmark: a 100-episode scripted cohort per world (budget ≤ 60 s each), plus its primary rate.

Run: python benchmarks/worlds_bench.py [--episodes 100]
"""

from __future__ import annotations

import argparse
import time

from worlds import get_world, list_worlds, quick_cohort, summarise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"{'world':5} {'episodes':>8} {'seconds':>8} {'ep/s':>7} {'steps/ep':>8}  primary endpoint (pooled, Wilson 95%)"
    )
    for name in list_worlds():
        world = get_world(name)
        t0 = time.perf_counter()
        cohort = quick_cohort(name, args.episodes, seed=args.seed)
        dt = time.perf_counter() - t0
        rows = [r for r in summarise(cohort, [world.primary]) if r.condition in ("pooled", *world.conditions)]
        row = next(r for r in rows if r.condition == "pooled") if len(cohort.conditions) > 1 else rows[0]
        steps = sum(len(e.steps) for e in cohort.episodes) / max(1, len(cohort.episodes))
        flag = "" if dt <= 60 else "  OVER BUDGET"
        print(
            f"{name:5} {len(cohort.episodes):8d} {dt:8.2f} {len(cohort.episodes) / dt:7.1f} {steps:8.1f}  "
            f"{world.primary} {row.successes}/{row.total} ({row.rate:.1%}; {row.low:.1%}–{row.high:.1%}){flag}"
        )


if __name__ == "__main__":
    main()
