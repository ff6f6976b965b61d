"""Triage of many runs, timed: ``auditor triage`` on a folder of τ-bench-sized runs.

    python benchmarks/triage_bench.py [--runs 500] [--source DIR] [--jobs N] [--json]

The folder is built from the real τ-bench airline runs (``shared/data/taubench/airline``): each
run is repeated under a new trace id (the copy's number beside its messages changes the file's
digest, from which the id comes) with its reward from ``outcomes.csv``, so the table shows
recorded outcomes. The command runs as a user runs it, in a fresh process against a fresh SQLite
store, with the airline policy; the target is 500 runs in at most 60 s on the development machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "taubench" / "airline"
TARGET_S = 60.0


def build_folder(source: Path, runs: int, out: Path) -> int:
    """Write ``runs`` copies of the source runs (cycling through them) into ``out``; returns the
    bytes written."""
    with (source / "outcomes.csv").open(newline="") as f:
        reward = {row["file"]: float(row["reward"]) for row in csv.DictReader(f)}
    originals = sorted((source / "runs").glob("*.json"))
    written = 0
    for n in range(runs):
        path = originals[n % len(originals)]
        doc = json.loads(path.read_text(encoding="utf-8"))
        copy = {"task_id": path.stem, "reward": reward[path.name], "info": {"copy": n}, **doc}
        text = json.dumps(copy)
        (out / f"run{n:04d}-{path.name}").write_text(text, encoding="utf-8")
        written += len(text)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument(
        "--source", type=Path, default=DATA, help="τ-bench domain folder (runs/, outcomes.csv)"
    )
    parser.add_argument("--jobs", type=int, default=None, help="passed to auditor triage --jobs")
    parser.add_argument("--policy", type=Path, default=ROOT / "examples" / "policies" / "airline.yaml")
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="triage-bench-") as tmp:
        folder = Path(tmp) / "runs"
        folder.mkdir()
        size = build_folder(args.source, args.runs, folder)
        command = [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", f"sqlite:///{tmp}/store.db"]
        command += ["triage", str(folder), "--policy", str(args.policy), "--json"]
        command += ["--jobs", str(args.jobs)] if args.jobs else []
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**os.environ})
        seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"auditor triage failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout)
    totals = result["totals"]
    if totals["runs"] != args.runs or totals["failed"]:
        raise SystemExit(f"expected {args.runs} reviewed runs and no failure, got {totals}")
    top = result["runs"][0]
    measured = {
        "runs": args.runs,
        "mib": round(size / 2**20, 1),
        "seconds": round(seconds, 1),
        "runs_per_second": round(args.runs / seconds, 1),
        "cpus": os.cpu_count(),
        "target_seconds": TARGET_S,
        "met": seconds <= TARGET_S * args.runs / 500,
        "riskiest": {k: top[k] for k in ("file", "outcome", "risk_score", "top_finding", "agent", "step_id")},
    }
    if args.json:
        print(json.dumps(measured, indent=2, ensure_ascii=False))
    else:
        print(
            f"{args.runs} runs ({measured['mib']} MiB) triaged in {measured['seconds']} s "
            f"({measured['runs_per_second']} runs/s, {measured['cpus']} CPUs); target ≤ {TARGET_S:.0f} s "
            f"for 500: {'met' if measured['met'] else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
