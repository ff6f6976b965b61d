"""Whether review time stays linear when a run's texts hold long runs of one character.

A pattern that backtracks over a run it cannot match (a scheme never followed by ``://``, a
code's letters never followed by a hyphen) costs the square of the run's length: one line of a
tool's output, a separator row or a blob, can stall a whole review. Each real run below (shipped
examples and frozen fixtures: a coding run, a Claude Code session, a τ-bench airline run, an
AgentDojo run, a Who&When run) is reviewed with the same text appended to its request, its
agent's first step and its first tool result: a run of each character (or short unit) of ``SHAPES``,
of ``--length`` characters and of twice that. Prints, per run, the review's time on plain words of
the same length (the baseline) and the shape whose review grew most from the shorter run to the
longer: linear readers take about twice the time (2x), a quadratic one four times; a growth above
``--limit`` is flagged (exit 1).

    python benchmarks/long_runs_probe.py                    # 10,000 and 20,000 characters a text
    python benchmarks/long_runs_probe.py --length 20000 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from ingest import open_traces
from schemas import ActorKind, StepKind, Trace

REPO = Path(__file__).resolve().parents[1]
RUNS = {
    "coding run (mini-SWE-agent)": "tests/fixtures/real/mini-swe-agent/sympy__sympy-18211.traj.json",
    "session (Claude Code)": "tests/fixtures/real/claude-code/pytest_edit_commit_session.jsonl",
    "airline (τ-bench)": "examples/incidents/airline-task041-trial0.json",
    "injected tool result (AgentDojo)": "examples/incidents/agentdojo-banking-injected-rent.json",
    "multi-agent (Who&When)": "examples/whowhen/hand-crafted-6.json",
}
BASELINE = "lorem ipsum "
SHAPES = [
    " ", "\n", " \n", "\t", "-", "=", "_", ".", ":", "::", ",", ";", "/", "\\", "|", "#", "*", "`",
    "'", '"', "(", "[", "{", "<", "@", "$", "%", "a", "A", "1", "x.py", "a-", "a.", "A1", "1,", "a@",
    "FAILED ", "Error: ", 'File "', "E   ", "word\n", "http:/",
]  # fmt: skip


def with_text(trace: Trace, text: str) -> Trace:
    """The trace with ``text`` appended to its first principal's message, its agent's first step (a
    message, or a call with its thought) and its first tool result (each that it has)."""
    firsts = {
        next((i for i, s in enumerate(trace.steps) if test(s)), None)
        for test in (
            lambda s: s.actor_kind is ActorKind.human,
            lambda s: s.actor_kind is ActorKind.agent and s.kind is not StepKind.tool_result,
            lambda s: s.kind is StepKind.tool_result,
        )
    }
    steps = [
        s.model_copy(update={"content": f"{s.content}\n{text}"}) if i in firsts else s
        for i, s in enumerate(trace.steps)
    ]
    return trace.model_copy(update={"steps": steps})


def seconds(trace: Trace, text: str) -> float:
    """The review's CPU seconds with ``text`` appended (the best of two)."""
    changed = with_text(trace, text)
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        run_rules_audit(changed)
        best = min(best, time.process_time() - start)
    return best


def probe(length: int, limit: float, runs: dict[str, str] = RUNS, shapes: list[str] = SHAPES) -> list[dict]:
    """One row per run and shape: the review's seconds at ``length`` and at twice it, their ratio."""
    rows = []
    for name, path in runs.items():
        imported = next(iter(open_traces(REPO / path)))
        trace = Trace(header=imported.header, steps=list(imported.steps()))
        seconds(trace, "")  # warm: patterns compiled, caches filled
        base = seconds(trace, BASELINE * (length // len(BASELINE)))
        for shape in shapes:
            short, long = (seconds(trace, shape * (n // len(shape))) for n in (length, 2 * length))
            growth = long / max(short, 1e-3)
            rows.append(
                {
                    "run": name,
                    "shape": shape,
                    "seconds": short,
                    "doubled": long,
                    "growth": growth,
                    "baseline": base,
                }
            )
            if growth > limit:
                print(
                    f"  grows: {name}, {shape!r}: {short:.2f} s, twice as long {long:.2f} s", file=sys.stderr
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=10_000, help="characters appended to each text")
    ap.add_argument(
        "--limit", type=float, default=3.0, help="flag a review this many times slower on twice the run"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = probe(args.length, args.limit)
    slow = [r for r in rows if r["growth"] > args.limit]
    if args.json:
        json.dump({"length": args.length, "limit": args.limit, "rows": rows}, sys.stdout, indent=2)
        print()
        return 1 if slow else 0
    print(
        f"review CPU seconds with {args.length:,} and {2 * args.length:,} characters in three texts of each run"
    )
    for name in RUNS:
        mine = [r for r in rows if r["run"] == name]
        worst = max(mine, key=lambda r: r["growth"])
        print(
            f"{name:34} words {mine[0]['baseline']:5.2f} s   grows most {worst['shape']!r:10}"
            f" {worst['seconds']:5.2f} s -> {worst['doubled']:5.2f} s ({worst['growth']:.1f}x)"
        )
    print(f"{len(slow)} of {len(rows)} shapes grew more than {args.limit}x for twice the run")
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
