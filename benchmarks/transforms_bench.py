"""Exact interaction transforms against shapiq's ExactComputer: same numbers, and how much faster.

For random games over n = 8, 12 and 16 factors it computes, with ``scoring.transforms`` and with
shapiq (a benchmark-only dependency: ``pip install shapiq``), the Harsanyi/Möbius dividends
(shapiq "Moebius"), the Shapley interaction index ("SII") and the full-context transform
(shapiq "Co-Moebius", the discrete derivative at background N ∖ B), and prints the largest
difference over every interaction shapiq returns and both run times. (shapiq's Co-Moebius puts the
baseline v(∅) at the empty set, where the derivative at background N is v(N); the audit never
reads order 0, so that one entry is left out of the comparison.) Targets: equal within 1e-10
everywhere, and at least 100× faster at n = 12.

shapiq's SII and Co-Moebius loop over every (coalition, interaction) pair in Python, 4^n steps at
full order (about 4·10^9 at n = 16), so above ``--full-order-max`` they are computed up to order
3, the orders the audit reads (top-K, order ≤ 3); our transforms still compute every order.

    python benchmarks/transforms_bench.py [--sizes 8 12 16] [--full-order-max 12] [--seed 0]

The machine may be shared: the load average is printed, our times are the best of several runs
and shapiq's is one run (it takes seconds to minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from scoring.transforms import full_context, moebius, shapley_interaction

TOLERANCE = 1e-10
SPEEDUP_AT_12 = 100.0
TRANSFORMS: tuple[tuple[str, str, Callable[[np.ndarray], np.ndarray]], ...] = (
    ("moebius", "Moebius", moebius),
    ("shapley_interaction", "SII", shapley_interaction),
    ("full_context", "Co-Moebius", full_context),
)


def ours_seconds(fn: Callable[[np.ndarray], np.ndarray], game: np.ndarray) -> float:
    """Best per-call time over five repeats, each long enough to time reliably."""
    number = max(1, int(0.05 / max(timeit.timeit(lambda: fn(game), number=1), 1e-7)))
    return min(timeit.repeat(lambda: fn(game), number=number, repeat=5)) / number


def shapiq_run(game: np.ndarray, n: int, index: str, order: int) -> tuple[dict[int, float], float]:
    """shapiq's values keyed by our subset mask, and the seconds the transform took."""
    from shapiq import ExactComputer

    weights = 1 << np.arange(n)
    computer = ExactComputer(lambda c: game[c.astype(np.int64) @ weights], n, evaluate_game=True)
    t0 = time.perf_counter()
    result = computer(index, order)
    seconds = time.perf_counter() - t0
    values = {
        sum(1 << i for i in s): float(result.values[pos]) for s, pos in result.interaction_lookup.items()
    }
    return values, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 12, 16])
    parser.add_argument(
        "--full-order-max", type=int, default=12, help="above this n: SII/Co-Moebius to order 3"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from importlib.metadata import version

    print(f"shapiq {version('shapiq')}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    header = f"{'n':>3}  {'transform':<20} {'shapiq index':<11} {'orders':>6}  {'max |diff|':>10}"
    header += f"  {'ours':>10}  {'shapiq':>9}  {'speedup':>9}"
    print(header)
    failures = []
    rng = np.random.default_rng(args.seed)
    for n in args.sizes:
        game = rng.normal(scale=3.0, size=1 << n)  # log-odds scale
        for name, index, fn in TRANSFORMS:
            order = n if index == "Moebius" or n <= args.full_order_max else 3
            ours = fn(game)
            theirs, their_s = shapiq_run(game, n, index, order)
            if index == "Co-Moebius":
                theirs.pop(0)
            masks = np.fromiter(theirs, dtype=np.int64)
            diff = float(np.abs(ours[masks] - np.fromiter(theirs.values(), dtype=np.float64)).max())
            our_s = ours_seconds(fn, game)
            speedup = their_s / our_s
            print(
                f"{n:>3}  {name:<20} {index:<11} {'≤' + str(order):>6}  {diff:>10.1e}"
                f"  {our_s * 1e3:>8.3f}ms  {their_s:>8.2f}s  {speedup:>8,.0f}x",
                flush=True,
            )
            if diff > TOLERANCE:
                failures.append(f"n={n} {name}: max |diff| {diff:.1e} > {TOLERANCE:.0e}")
            if n == 12 and speedup < SPEEDUP_AT_12:
                failures.append(f"n=12 {name}: {speedup:.0f}x < {SPEEDUP_AT_12:.0f}x")
    passed = "all equal within 1e-10" + (" and ≥100x faster at n = 12" if 12 in args.sizes else "")
    print("\n".join(failures) or passed)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
