"""Ingest throughput: parse-and-normalise steps/s for every registered importer, and `auditor
ingest` of generated canonical files (10k and 100k steps) into SQLite end to end, with wall and CPU
time (the machine is shared: CPU time is the steadier figure) and peak memory.

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

from ingest import open_traces, registry  # noqa: E402
from ingest.registry import detect  # noqa: E402
from tests.conftest import DATA  # noqa: E402

FIX = REPO / "tests" / "fixtures" / "ingest"


def samples(canonical: Path) -> dict[str, tuple[str, list[Path]]]:
    """Every registered importer with the files it reads here: the real corpus where it has that
    format (each MAST raw log grouped by the importer that detects it), hand-written fixtures
    for the span and Inspect formats (the corpus has none), a generated file for canonical."""
    rows: dict[str, tuple[str, list[Path]]] = {
        "canonical": ("generated, 10k steps", [canonical]),
        "mad": (
            "MAD_human_labelled_dataset.json, 19 records",
            [DATA / "mast" / "MAD_human_labelled_dataset.json"],
        ),
        "whowhen": ("hand-crafted + algorithm-generated, all files", []),
        "otel-genai": ("fixtures", [FIX / "otel_genai.json", FIX / "otel_genai_generations.json"]),
        "openinference": (
            "fixtures",
            [FIX / "openinference_spans.jsonl", FIX / "openinference_handoff.jsonl"],
        ),
        "inspect": ("fixtures", [FIX / "inspect_eval.json", FIX / "inspect_events.json"]),
    }
    for subset in ("hand-crafted", "algorithm-generated"):
        rows["whowhen"][1].extend(
            sorted((DATA / "whowhen" / subset).glob("*.json"), key=lambda p: int(p.stem))
        )
    for path in sorted((DATA / "mast" / "derived" / "traces").iterdir()):
        name = detect(path)[0]
        rows.setdefault(name, ("MAST derived raw logs", []))[1].append(path)
    missing = set(registry) - set(rows)
    if missing:
        raise SystemExit(f"no sample for importer(s): {', '.join(sorted(missing))}")
    return rows


def parse_rate(files: list[Path], repeat: int = 3) -> tuple[int, float, float]:
    """Steps, best wall seconds and best CPU seconds of a full parse of ``files``."""
    best, best_cpu = float("inf"), float("inf")
    steps = 0
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        steps = sum(sum(1 for _ in t.steps()) for f in files for t in open_traces(f))
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return steps, best, best_cpu


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


def cli_ingest(path: Path, workdir: Path) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one `auditor ingest` process."""
    code = (
        "import resource, sys; from auditor.cli.main import run; sys.argv=['auditor','ingest',sys.argv[1],'--json'];\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=workdir,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = (
        next((int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK")), 0) / 1024
    )
    return wall, cpu, peak, proc.stdout.strip().replace("\n", " ")[:160]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        generated = work / "canonical_table.jsonl"
        write_canonical(generated, 10_000)
        print("parse-and-normalise, every importer (best of 3; the fixtures are small, so fixed costs weigh)")
        print(
            f"{'importer':14s} {'source':46s} {'files':>5s} {'steps':>7s} {'wall s':>7s} {'cpu s':>7s} {'steps/s':>9s}"
        )
        for name, (where, files) in samples(generated).items():
            steps, secs, cpu = parse_rate(files)
            print(
                f"{name:14s} {where:46s} {len(files):5d} {steps:7d} {secs:7.3f} {cpu:7.3f} {steps / secs:9,.0f}"
            )
        print(
            "\nauditor ingest of a generated canonical file into a fresh SQLite store (target 100k: <= 10 s)"
        )
        for n in args.sizes:
            f = work / f"canonical_{n}.jsonl"
            write_canonical(f, n)
            store = work / f"store_{n}"
            store.mkdir()
            wall, cpu, peak, out = cli_ingest(f, store)
            print(
                f"canonical {n:>7d} steps ({f.stat().st_size / 1e6:.1f} MB): {wall:.2f} s wall, {cpu:.2f} s CPU "
                f"({n / wall:,.0f} steps/s), peak RSS {peak:.0f} MiB"
            )
            print(f"  {out}")


if __name__ == "__main__":
    main()
