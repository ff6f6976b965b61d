"""Benchmark `auditor review` with the rules engine: wall time including process start, CPU, peak memory.

Each run is the real command line in a fresh process on a fresh SQLite store: import, append to
the store, build the annotated graph, run every detector, validate, file the report and print the
terminal summary. The traces are those of the other benchmarks, written as canonical JSONL:

- ``embedded`` (default): the shipped example's status drift (examples/renewal_drift.jsonl) in the
  middle of ordinary chatter between twelve participants (``render_bench.embedded_trace``);
- ``dense``: twenty participants whose every step carries invoice ids, amounts in several
  spellings, statuses, hedges and attributions, with tool calls, reads and handoffs
  (``graph_bench.synthetic_trace``): the annotation and provenance passes' worst case.

Targets: 1,000 steps <= 1.5 s wall including process start; 100,000 steps <= 60 s and <= 3 GB;
1,000,000 steps <= 1.5 GB peak RSS (issue 22 item 6; no wall target: minutes on a shared machine).

    python benchmarks/review_bench.py                       # 1k, 10k, 100k (embedded)
    python benchmarks/review_bench.py --workload dense --sizes 1000 10000
    python benchmarks/review_bench.py --sizes 1000 --repeat 7
    python benchmarks/review_bench.py --sizes 1000000       # one review of a million steps

The machine may be shared: each size runs ``--repeat`` times (once at 100k and above) and the
table shows the fastest run, its CPU seconds (user + system of that process alone), the peak RSS
and the load average. A first untimed run, of 1,000 steps, writes the bytecode cache to a private
directory (PYTHONPYCACHEPREFIX), as an installed package has one; sources are never compiled in a
timed run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOADS = {"embedded": "render_bench:embedded_trace", "dense": "graph_bench:synthetic_trace"}
# steps -> (wall s, peak MB); None: no target
TARGETS: dict[int, tuple[float | None, float | None]] = {
    1000: (1.5, None),
    100_000: (60.0, 3 * 1024),
    1_000_000: (None, 1.5 * 1024),
}
WARM_STEPS = 1000


def command() -> list[str]:
    """The installed console script beside this interpreter, else the module entry point."""
    script = shutil.which("auditor", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "auditor.surfaces.cli.main"]


def write_trace(workload: str, n: int, path: Path) -> None:
    """Write one generated trace as canonical JSONL (in a child process of its own, see generate)."""
    import importlib

    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
    from ingest.canonical import write_canonical

    module, name = WORKLOADS[workload].split(":")
    trace = getattr(importlib.import_module(module), name)(n)
    with path.open("w", encoding="utf-8") as out:
        write_canonical(trace.header, trace.steps, out)


def generate(workload: str, n: int, directory: Path) -> Path:
    """The trace file, written by a child process: the driver stays small, so the peak RSS the
    kernel reports for each review (it counts the driver's memory copied at fork) is the
    review's own."""
    path = directory / f"{workload}-{n}.jsonl"
    subprocess.run([sys.executable, __file__, "--write", workload, str(n), str(path)], check=True)
    return path


def review_once(trace: Path, store: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, decision line) of one `auditor review` process; the usage
    figures are that child's own (wait4), not the benchmark's."""
    store.unlink(missing_ok=True)
    argv = [*command(), "--store", f"sqlite:///{store}", "review", str(trace)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        text, problem = out.read(), err.read()
    if proc.returncode not in (0, 1):  # 1: an actionable finding was filed, as on the embedded drift
        raise SystemExit(f"auditor review failed (rc {proc.returncode}): {problem.strip()[-2000:]}")
    decision = next((line.strip() for line in text.splitlines() if line.startswith("decision:")), "")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, decision


def verdict(n: int, wall: float, peak: float) -> str:
    target = TARGETS.get(n)
    if target is None:
        return ""
    max_wall, max_mb = target
    ok = (max_wall is None or wall <= max_wall) and (max_mb is None or peak <= max_mb)
    limits = [f"<= {max_wall:g} s"] if max_wall is not None else []
    limits += [f"<= {max_mb / 1024:g} GB"] if max_mb is not None else []
    return f"{'ok' if ok else 'OVER'} (target {', '.join(limits)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="embedded")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per size below 100k (the fastest is shown)"
    )
    parser.add_argument("--write", nargs=3, metavar=("WORKLOAD", "N", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_trace(args.write[0], int(args.write[1]), Path(args.write[2]))
        return
    with tempfile.TemporaryDirectory(prefix="review-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        traces = {n: generate(args.workload, n, work) for n in args.sizes}
        warm = traces.get(WARM_STEPS) or generate(args.workload, WARM_STEPS, work)
        review_once(warm, work / "warm.db", env)  # fills the bytecode cache
        load = os.getloadavg()[0]
        rows = []
        for n in args.sizes:
            runs = [
                review_once(traces[n], work / f"r{n}.db", env)
                for _ in range(1 if n >= 100_000 else args.repeat)
            ]
            walls = [r[0] for r in runs]
            best = min(runs)
            rows.append((n, best, walls))
    print(f"auditor review, rules engine, {args.workload} traces: {' '.join(command())}")
    print(f"load average at start: {load:.1f} on {os.cpu_count()} CPUs; fastest of the runs shown")
    print(f"{'steps':>8} {'wall s':>8} {'cpu s':>7} {'peak MB':>8}  {'all walls s':<20} verdict")
    for n, (wall, cpu, peak, _), walls in rows:
        runs = ",".join(f"{w:.2f}" for w in walls)
        print(f"{n:>8} {wall:>8.2f} {cpu:>7.2f} {peak:>8.0f}  {runs:<20} {verdict(n, wall, peak)}")
    print(f"summary at {rows[-1][0]} steps: {rows[-1][1][3]}")


if __name__ == "__main__":
    main()
