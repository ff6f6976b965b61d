"""How review and the test timeline scale with a coding run's test output.

A real mini-SWE-agent run of the corpus (sympy-18211, frozen in the repository) is extended by
``--reruns`` runs of the project's test suite after its fix, each failing ``--failures`` tests and
naming every one (pytest's ``FAILED id`` lines): the shape of an agent rerunning a large suite
with many failures, which every fact about failed tests walks. Prints, per size, the trace's size,
the review's time (the rules engine, every detector) and the timeline's (``auditor traces tests``).

    python benchmarks/coding_run_bench.py                       # 20/200/2000 failures, 50 reruns
    python benchmarks/coding_run_bench.py --failures 2000 --reruns 200
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from auditor.audit.test_timeline import timeline
from ingest import open_traces
from schemas import Trace

TEMPLATE = (
    Path(__file__).resolve().parents[1] / "tests/fixtures/real/mini-swe-agent/sympy__sympy-18211.traj.json"
)
SUITE = "sympy/core/tests/test_relational.py"


def extended(failures: int, reruns: int) -> Trace:
    """The template with ``reruns`` failing suite runs before its submitting turn."""
    doc = json.loads(TEMPLATE.read_text())
    messages = doc["messages"]
    failed = "\n".join(f"FAILED {SUITE}::test_case_{i} - AssertionError" for i in range(failures))
    output = f"<returncode>1</returncode>\n<output>\n{failed}\n===== {failures} failed, 40 passed in 3.21s =====\n</output>"
    turn = {
        "role": "assistant",
        "content": f"THOUGHT: Run the suite again.\n\n```bash\npython -m pytest {SUITE}\n```",
    }
    added = [m for _ in range(reruns) for m in (turn, {"role": "user", "content": output})]
    doc["messages"] = messages[:-2] + added + messages[-2:]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.traj.json"
        path.write_text(json.dumps(doc))
        imported = next(open_traces(path))
        return Trace(header=imported.header, steps=list(imported.steps()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failures", type=int, nargs="*", default=[20, 200, 2000])
    parser.add_argument("--reruns", type=int, default=50)
    args = parser.parse_args()
    print(f"{'failures':>9} {'reruns':>7} {'steps':>6} {'MB':>7} {'review s':>9} {'timeline s':>11}")
    for failures in args.failures:
        trace = extended(failures, args.reruns)
        size = sum(len(s.content) for s in trace.steps) / 1e6
        started = time.perf_counter()
        run_rules_audit(trace)
        reviewed = time.perf_counter() - started
        started = time.perf_counter()
        found = timeline(trace)
        laid_out = time.perf_counter() - started
        assert len(found.verdicts) >= failures  # every failed test has its last word
        print(
            f"{failures:>9} {args.reruns:>7} {len(trace.steps):>6} {size:>7.1f} {reviewed:>9.2f} {laid_out:>11.2f}"
        )


if __name__ == "__main__":
    main()
