"""Benchmark the report renderers: time and output size per format on growing traces.

Each trace is the shipped example (a real status drift, examples/renewal_drift.jsonl) set in the
middle of n - 8 steps of ordinary chatter between twelve participants, audited by the rules engine
with every detector; then the report is rendered as json, md, html (with the graph drawing) and
sarif. The audit's graph is passed to the HTML renderer, as `auditor review` does.

    python benchmarks/render_bench.py               # 1k and 10k steps
    python benchmarks/render_bench.py --sizes 100000 --detectors state_drift   # renderers at 100k
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditor.audit.engine import run_rules_audit
from auditor.audit.report.render import FORMATS, render
from graph import build_graph
from ingest.canonical import iter_canonical, scan_canonical
from schemas import Trace, TraceStep

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "renewal_drift.jsonl"
PEOPLE = [f"ops_{i:02d}" for i in range(12)]
CHATTER = [
    "Standup notes for the {d} sync are in the shared folder.",
    "Ticket OPS-{n} is closed; the backlog review moves to {d}.",
    "Can you check the on-call rota for {d}? Thanks.",
    "The weekly metrics export finished without errors.",
]


def embedded_trace(n: int, seed: int = 11) -> Trace:
    """The example's eight steps in the middle of ``n`` steps of unrelated chatter."""
    rng = random.Random(seed)
    example = list(iter_canonical(EXAMPLE))
    middle = (n - len(example)) // 2
    steps: list[TraceStep] = []
    for i in range(n - len(example)):
        if i == middle:
            steps += [s.model_copy(update={"index": len(steps) + k}) for k, s in enumerate(example)]
        actor, other = rng.sample(PEOPLE, 2)
        text = rng.choice(CHATTER).format(d=f"2026-11-{1 + i % 28:02d}", n=i)
        steps.append(
            TraceStep(step_id=f"c{i}", index=len(steps), actor=actor, recipients=[other], content=text)
        )
    header = scan_canonical(EXAMPLE).header.model_copy(update={"trace_id": f"bench-render-{n}"})
    return Trace(header=header, steps=steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--detectors", nargs="+", default=None, help="detector names (default: all)")
    args = parser.parse_args()
    print(
        f"{'steps':>7} {'audit s':>8} {'findings':>8}  "
        + "  ".join(f"{f + ' s':>8} {f + ' KB':>9}" for f in FORMATS)
    )
    for n in args.sizes:
        trace = embedded_trace(n)
        t0 = time.perf_counter()
        report = run_rules_audit(trace, detectors=args.detectors)
        audit_s = time.perf_counter() - t0
        graph = build_graph(trace, report.graph_mode)
        cells = []
        for fmt in FORMATS:
            t0 = time.perf_counter()
            text = render(report, trace, fmt, graph=graph)
            cells.append(f"{time.perf_counter() - t0:>8.3f} {len(text.encode()) / 1024:>9.1f}")
        print(f"{n:>7} {audit_s:>8.2f} {len(report.findings):>8}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
