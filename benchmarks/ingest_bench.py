"""Ingest throughput: parse-and-normalise steps/s per format, and `auditor ingest` of generated
canonical files (10k and 100k steps) into SQLite end to end, with peak memory.

Run: python benchmarks/ingest_bench.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ingest import open_traces  # noqa: E402
from tests.conftest import DATA  # noqa: E402

SAMPLES = {
    "mad (19 records)": DATA / "mast" / "MAD_human_labelled_dataset.json",
    "hyperagent": DATA / "mast/derived/traces/10_Round3_HyperAgent_SWE-Bench-Lite.json",
    "chatdev": DATA / "mast/derived/traces/13_Round3_ChatDev_ProgramDev.txt",
    "appworld": DATA / "mast/derived/traces/11_Round3_AppWorld_Test-C.txt",
    "openmanus": DATA / "mast/derived/traces/18_Generlazability_GAIA_OpenManus.txt",
    "magentic-one": DATA / "mast/derived/traces/17_Generlazability_GAIA_Magentic.txt",
    "whowhen (hand-crafted dir)": DATA / "whowhen" / "hand-crafted",
    "otel-genai": REPO / "tests/fixtures/ingest/otel_genai.json",
    "inspect": REPO / "tests/fixtures/ingest/inspect_eval.json",
}


def parse_rate(path: Path, repeat: int = 3) -> tuple[int, float]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    best = float("inf")
    steps = 0
    for _ in range(repeat):
        start = time.perf_counter()
        steps = sum(sum(1 for _ in t.steps()) for f in files for t in open_traces(f))
        best = min(best, time.perf_counter() - start)
    return steps, best


def write_canonical(path: Path, steps: int) -> None:
    with path.open("w") as out:
        out.write(json.dumps({"record": "header", "trace_id": f"bench-{steps}", "source": "bench"}) + "\n")
        for i in range(steps):
            out.write(
                json.dumps(
                    {
                        "step_id": f"s{i}",
                        "index": i,
                        "actor": f"agent_{i % 7}",
                        "recipients": [f"agent_{(i + 1) % 7}"] if i % 3 else None,
                        "kind": "tool_call" if i % 5 == 0 else "message",
                        "content": f"Step {i}: checked invoice {i * 17 % 9973} against the ledger; total {i * 3.5:.2f} EUR.",
                        "tool": {"name": "ledger.lookup", "arguments": {"id": i}} if i % 5 == 0 else None,
                    }
                )
                + "\n"
            )


def cli_ingest(path: Path, workdir: Path) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MiB) of one `auditor ingest` process."""
    code = (
        "import resource, sys; from auditor.cli.main import run; sys.argv=['auditor','ingest',sys.argv[1],'--json'];\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=workdir,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    wall = time.perf_counter() - start
    peak = (
        next((int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK")), 0) / 1024
    )
    return wall, peak, proc.stdout.strip().replace("\n", " ")[:160]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    print("parse-and-normalise (best of 3)")
    print(f"{'format':28s} {'steps':>7s} {'seconds':>8s} {'steps/s':>9s}")
    for name, path in SAMPLES.items():
        steps, secs = parse_rate(path)
        print(f"{name:28s} {steps:7d} {secs:8.3f} {steps / secs:9.0f}")
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        for n in args.sizes:
            f = work / f"canonical_{n}.jsonl"
            write_canonical(f, n)
            steps, secs = parse_rate(f, repeat=1)
            wall, peak, out = cli_ingest(f, work)
            print(
                f"canonical {n:>7d} steps ({f.stat().st_size / 1e6:.1f} MB): parse {steps / secs:,.0f} steps/s; "
                f"auditor ingest end to end {wall:.2f} s ({n / wall:,.0f} steps/s), peak RSS {peak:.0f} MiB"
            )
            print(f"  {out}")
    print(f"(benchmark process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
