"""Ingest throughput: parse-and-normalise steps/s for every registered importer, `auditor
ingest` of generated canonical files (10k and 100k steps) into SQLite end to end, with wall and CPU
time (the machine is shared: CPU time is the steadier figure) and peak memory, and the span
importer's peak memory on generated single-document OTLP files (20k and 200k spans): flat in
file size, since the document is walked span by span and the grouping by trace spills to SQLite.

Run: python benchmarks/ingest_bench.py [--sizes 10000 100000] [--span-sizes 20000 200000]
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
        "import resource, sys; from auditor.surfaces.cli.main import run; sys.argv=['auditor','ingest',sys.argv[1],'--json'];\n"
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


SPANS_PER_TRACE = 5
INTERLEAVE = 50  # traces whose spans are interleaved, as a batching exporter writes them


def _attr(key: str, value: object) -> dict:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _trace_spans(t: int) -> list[dict]:
    """One agent turn: invoke_agent, a chat that calls a tool, the tool (every 7th fails), the
    answer, and a handoff."""
    trace_id, base = f"{t:032x}", 1_761_825_600_000_000_000 + t * 10_000_000_000
    root = f"{t:012x}0001"
    call = f"call_{t}"
    failed = t % 7 == 0

    def span(n: int, name: str, attrs: list[dict], **extra: object) -> dict:
        return {
            "traceId": trace_id, "spanId": f"{t:012x}{n:04x}", "parentSpanId": "" if n == 1 else root,
            "name": name, "kind": 1, "startTimeUnixNano": str(base + n * 1_000_000_000),
            "endTimeUnixNano": str(base + n * 1_000_000_000 + 500_000_000), "attributes": attrs, **extra,
        }  # fmt: skip

    answer = f"Invoice {t * 17 % 9973} matches the ledger; total {t * 3.5:.2f} EUR."
    return [
        span(1, "invoke_agent Clerk", [
            _attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "Clerk"),
            _attr("gen_ai.conversation.id", f"conv-{t}"),
            _attr("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"Check invoice {t}."}]}])),
            _attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])),
        ]),
        span(2, "chat gpt-4o", [
            _attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "gpt-4o"),
            _attr("gen_ai.usage.input_tokens", 400 + t % 50),
            _attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": call, "name": "ledger_lookup", "arguments": {"invoice": t}}]}])),
        ]),
        span(3, "execute_tool ledger_lookup", [
            _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "ledger_lookup"),
            _attr("gen_ai.tool.call.id", call),
            *([] if failed else [_attr("gen_ai.tool.call.result", json.dumps({"invoice": t, "total": t * 3.5}))]),
        ], status={"code": 2, "message": "ledger service timed out"} if failed else {"code": 1}),
        span(4, "chat gpt-4o", [
            _attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "gpt-4o"),
            _attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])),
        ]),
        span(5, "handoff Auditor", [_attr("gen_ai.transfer.target.name", "Auditor")]),
    ]  # fmt: skip


def write_otlp(path: Path, spans: int) -> None:
    """One OTLP JSON document of ``spans`` spans, written span by span. A resourceSpans entry per
    interleaved batch of traces; every other entry writes its resource after its spans."""
    traces = spans // SPANS_PER_TRACE
    with path.open("w") as out:
        out.write('{"resourceSpans": [')
        for batch, first in enumerate(range(0, traces, INTERLEAVE)):
            resource = json.dumps(
                {"attributes": [_attr("service.name", "billing-desk"), _attr("batch", batch)]}
            )
            out.write(("," if batch else "") + "\n{")
            if batch % 2 == 0:
                out.write(f'"resource": {resource}, ')
            out.write('"scopeSpans": [{"scope": {"name": "bench"}, "spans": [')
            group = [_trace_spans(t) for t in range(first, min(first + INTERLEAVE, traces))]
            rows = [s for n in range(SPANS_PER_TRACE) for s in (g[n] for g in group)]
            out.write(",\n".join(json.dumps(r) for r in rows))
            out.write("]}]")
            if batch % 2 == 1:
                out.write(f', "resource": {resource}')
            out.write("}")
        out.write("]}\n")


def span_parse(path: Path) -> tuple[float, float, float, float, str]:
    """Wall and CPU seconds, peak RSS before and after (MiB) of parsing and normalising an OTLP
    file in a fresh process; the first RSS is the process with everything imported."""
    code = (
        "import resource, sys, time; from ingest import open_traces\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "start, cpu = time.perf_counter(), time.process_time()\n"
        "traces = steps = 0\n"
        "for t in open_traces(sys.argv[1], 'otel-genai'):\n"
        "    traces += 1; steps += sum(1 for _ in t.steps())\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(time.perf_counter() - start, time.process_time() - cpu, base / 1024, peak / 1024, traces, steps)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    wall, cpu, base, peak, traces, steps = proc.stdout.split()
    return float(wall), float(cpu), float(base), float(peak), f"{traces} traces, {steps} steps"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--span-sizes", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--only-spans", action="store_true", help="Run only the OTLP span case.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        print("otel-genai on a generated single-document OTLP file (peak RSS of a fresh process)")
        for n in args.span_sizes:
            f = Path(d) / f"otlp_{n}.json"
            write_otlp(f, n)
            wall, cpu, base, peak, what = span_parse(f)
            print(
                f"otlp {n:>7d} spans ({f.stat().st_size / 1e6:.1f} MB, {what}): {wall:.2f} s wall, "
                f"{cpu:.2f} s CPU ({n / wall:,.0f} spans/s), peak RSS {peak:.0f} MiB "
                f"({peak - base:.0f} MiB above the {base:.0f} MiB of the loaded process)"
            )
            f.unlink()
    if args.only_spans:
        return
    print()
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
