"""Precision and recall of the cumulative-action and delegated-disclosure detectors.

On the frozen paraphrase sets (with the policy a file's expectation names) and on scripted world
cohorts judged by the worlds' own ground truth (A1 ledger: ``cumulative_violation``; D1 field
judge: ``disclosure_final``), with and without the example policy. A positive is a realized
finding. Usage: ``python benchmarks/policy_detectors_bench.py [EPISODES]`` (default 60).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from auditor.audit.policy import Policy, load_policy
from ingest.canonical import iter_canonical, scan_canonical
from schemas import Trace

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "tests" / "fixtures" / "paraphrase"
WORLDS = {
    "A1": ("cumulative_action", "cumulative_violation"),
    "D1": ("delegated_disclosure", "disclosure_final"),
}


def realized(trace: Trace, detector: str, policy: Policy | None) -> tuple[bool, list[str]]:
    report = run_rules_audit(trace, "annotated", policy, [detector])
    got = [f.disposition.value for f in report.findings]
    return "realized" in got, got


def line(label: str, tp: int, fp: int, fn: int, tn: int, seconds: float, extra: str = "") -> str:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return (
        f"{label:<44} tp={tp:<3} fp={fp:<3} fn={fn:<3} tn={tn:<3} P={p:.2f} R={r:.2f} ({seconds:.1f}s){extra}"
    )


def paraphrase(detector: str) -> str:
    t0 = time.perf_counter()
    c = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    other = 0
    for name, expect in json.loads((SETS / detector / "expected.json").read_text()).items():
        path = SETS / detector / name
        policy = load_policy(SETS / detector / expect["policy"]) if "policy" in expect else None
        trace = Trace(header=scan_canonical(path).header, steps=list(iter_canonical(path)))
        hit, got = realized(trace, detector, policy)
        want = expect["disposition"] == "realized"
        c[("t" if hit == want else "f") + ("p" if hit else "n")] += 1
        other += not want and got == ([expect["disposition"]] if expect["disposition"] else [])
    extra = f"  non-realized expectations met: {other}"
    return line(f"{detector} paraphrase", **c, seconds=time.perf_counter() - t0, extra=extra)


def cohort(world: str, episodes: int) -> list[str]:
    from worlds import quick_cohort

    detector, endpoint = WORLDS[world]
    episodes_run = quick_cohort(world, episodes=episodes, seed=1000).episodes
    out = []
    for policy in (load_policy(ROOT / "examples" / "policies" / f"{world.lower()}.yaml"), None):
        t0 = time.perf_counter()
        c = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
        for ep in episodes_run:
            hit, _ = realized(ep.trace(), detector, policy)
            want = bool(ep.outcome.endpoints[endpoint])
            c[("t" if hit == want else "f") + ("p" if hit else "n")] += 1
        label = f"{world} cohort n={len(episodes_run)} {'with' if policy else 'without'} policy"
        out.append(line(label, **c, seconds=time.perf_counter() - t0))
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("episodes", nargs="?", type=int, default=60, help="episodes per world cohort")
    episodes = parser.parse_args(argv).episodes
    print(paraphrase("cumulative_action"))
    print(paraphrase("delegated_disclosure"))
    for world in WORLDS:
        for row in cohort(world, episodes):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
