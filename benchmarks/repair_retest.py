"""Five-arm repair retest: each world end to end offline (rules engines), 20 fresh episodes per arm.

Prints, per world: the control(s) applied, review rounds, the targeted outcome after the repair
and on the paired baseline (ground truth, Wilson 95% intervals), utility and Retain, AuditPass,
the fresh audits' beyond-label findings by class, the decision, and wall time. A pooled row
gives the batch's targeted-outcome rate.

    python benchmarks/repair_retest.py [--episodes 20] [--audit-episodes 20] [--worlds A1,B1,...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.core.errors import AuditorError
from auditor.core.store import open_store
from repair.pipeline import run_world
from repair.retest import RetestPlan
from scoring.stats import wilson_rate


def _ci(k: int, n: int) -> str:
    r = wilson_rate(k, n)
    return f"{k}/{n} ({r.low:.1%}–{r.high:.1%})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--audit-episodes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=10_000)
    ap.add_argument("--worlds", default="A1,B1,C1,D1,F1")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="repair-bench-"))
    store = open_store(f"sqlite:///{tmp / 'bench.db'}")
    header = (
        f"{'world':5} {'control(s)':44} {'rnd':>3} {'target after':>20} {'target baseline':>20} "
        f"{'U after':>7} {'U base':>7} {'Retain':>6} {'Audit':>5} {'beyond-label':28} {'decision':8} {'wall':>6}"
    )
    print(header)
    print("-" * len(header))
    pooled_k = pooled_n = 0
    for name in args.worlds.split(","):
        t0 = time.perf_counter()
        try:
            res = run_world(
                store, name, tmp / "configs", args.audit_episodes, retest=RetestPlan(args.episodes, args.seed)
            )
        except AuditorError as exc:
            print(f"{name:5} not run: {exc.one_line()}")
            continue
        wall = time.perf_counter() - t0
        controls = ",".join(sorted({c.control for c in res.state.latest.patch.controls}))
        rt = res.retest
        if rt is None:
            print(
                f"{name:5} {controls:44} {len(res.state.rounds):>3} rejected at review: {'; '.join(res.decision.reasons)}"
            )
            continue
        pooled_k += rt.target.successes
        pooled_n += rt.target.total
        beyond = Counter(b.classification for b in rt.beyond_label)
        shown = ", ".join(f"{k} {v}" for k, v in sorted(beyond.items())) or "none"
        retain = "n/a" if rt.retain is None else f"{rt.retain:.3f}"
        print(
            f"{name:5} {controls:44} {len(res.state.rounds):>3} {_ci(rt.target.successes, rt.target.total):>20} "
            f"{_ci(rt.baseline_target.successes, rt.baseline_target.total):>20} {rt.utility_after:7.3f} "
            f"{rt.utility_baseline:7.3f} {retain:>6} {rt.audit_pass!s:>5} {shown:28} "
            f"{'ACCEPT' if res.decision.accepted else 'REJECT':8} {wall:5.1f}s"
        )
        if res.decision.reasons:
            print(f"      reasons: {'; '.join(res.decision.reasons)}")
    if pooled_n:
        print(f"pooled targeted outcome after repair: {_ci(pooled_k, pooled_n)}")
    print(f"store and workflow-config repository: {tmp}")


if __name__ == "__main__":
    main()
