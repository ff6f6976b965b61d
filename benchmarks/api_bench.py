"""API latency of `auditor serve` on PostgreSQL under concurrent clients on loopback.

Seeds the store (once; a rerun only adds what is missing) with ``--traces`` traces and their
audited reports, through the same path as `auditor review`: copies of every real trace under
../shared/data (Who&When, MAST) under new ids, each audited for real by the rules engine, plus
``--long`` traces of 1,000 steps stitched from real steps. Then starts `auditor serve` as its own
process and runs two phases of ``--clients`` closed-loop clients (no think time):

- list/search: the console's trace list, unfiltered and deep-paged, and filtered by framework,
  participant, findings and severity, source, time window, a rare and a common word;
- trace page: what the console fetches for a 1,000-step trace (summary, graph and the first 500
  steps at once, then the report); the page's time is that of all four.

Targets (issue 14): list/search p95 <= 100 ms, trace page p95 <= 200 ms. Beside the latencies it
prints the CPU time per request of the server, of PostgreSQL and of the load generator, and the
load average: on a shared machine the latency under 20 clients follows how much CPU the three
are given, their cost per request does not.

    runuser -u postgres -- createdb -O auditor auditor_bench
    python benchmarks/api_bench.py [--pg postgresql://auditor:auditor@127.0.0.1:5432/auditor_bench]
    python benchmarks/api_bench.py --traces 300 --long 3 --seconds 5     # a small run
    python benchmarks/api_bench.py --workers 2     # two server processes (each its own view caches)
    python benchmarks/api_bench.py --varied        # every search draws its values from the data
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from auditor.audit.review import audit_trace, read_traces
from auditor.core.store import EventStore, open_store
from auditor.core.store.traces import append_trace
from auditor.surfaces.server.tokens import create_token
from schemas import Trace, TraceHeader, TraceStep

DEFAULT_URL = "postgresql://auditor:auditor@127.0.0.1:5432/auditor_bench"
DATA = Path("/work/shared/data")
if not DATA.exists():  # a clone beside its shared folder
    DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LONG_STEPS = 1000
STEP_PAGE = 500  # what the console's trace page asks for first
TARGETS = {"list/search": 100.0, "trace page": 200.0}


def real_traces() -> list[Trace]:
    """Every real trace of the shared corpus, parsed by the importers as `auditor review` does."""
    files = sorted(DATA.glob("whowhen/*/*.json")) + sorted(DATA.glob("mast/derived/traces/*.json"))
    return [trace for f in files for trace, _, _ in read_traces(f)]


def copy_of(template: Trace, i: int) -> Trace:
    """The template's steps, verbatim, under a new trace id."""
    header = template.header.model_copy(update={"trace_id": f"bench{i:05d}-{template.header.trace_id}"[:500]})
    return Trace(header=header, steps=template.steps)


def long_trace(k: int, templates: list[Trace], n: int = LONG_STEPS) -> Trace:
    """``n`` real steps from consecutive templates, renumbered; links kept within each segment."""
    steps: list[TraceStep] = []
    frameworks: list[str] = []
    seg = 0
    while len(steps) < n:
        source = templates[(k * 7 + seg) % len(templates)]
        frameworks.append(source.header.framework or "unknown")
        ids: dict[str, str] = {}
        for step in source.steps:
            if len(steps) >= n:
                break
            new_id = f"s{len(steps)}"
            ids[step.step_id] = new_id
            refs = step.refs and step.refs.model_copy(
                update={
                    "reply_to": ids.get(step.refs.reply_to or ""),
                    "call_id": step.refs.call_id and f"{seg}:{step.refs.call_id}",
                }
            )
            tool = step.tool and step.tool.model_copy(
                update={"call_id": step.tool.call_id and f"{seg}:{step.tool.call_id}"}
            )
            steps.append(
                step.model_copy(
                    update={
                        "step_id": new_id,
                        "index": len(steps),
                        "timestamp": None,
                        "refs": refs,
                        "tool": tool,
                    }
                )
            )
        seg += 1
    header = TraceHeader(
        trace_id=f"long{k:03d}-{n}",
        source=f"benchmarks/api_bench.py: {seg} real traces stitched",
        framework=frameworks[0],
        task=f"A {n}-step trace made of the steps of {seg} real traces ({', '.join(sorted(set(frameworks)))}).",
    )
    return Trace(header=header, steps=steps)


_worker: dict[str, object] = {}


def _init_worker(url: str) -> None:
    _worker["store"] = open_store(url)
    _worker["templates"] = real_traces()
    # build_graph ends with a full gc.collect(): keep what lives for the whole run out of its scan
    gc.freeze()


def _seed_one(job: tuple[str, int]) -> None:
    """Store one trace and file its rules-engine report (what `auditor review` does)."""
    store: EventStore = _worker["store"]  # type: ignore[assignment]
    templates: list[Trace] = _worker["templates"]  # type: ignore[assignment]
    kind, i = job
    trace = copy_of(templates[i % len(templates)], i) if kind == "copy" else long_trace(i, templates)
    append_trace(store, trace.header, trace.steps)
    audit_trace(store, trace)


def seed(url: str, traces: int, long: int, jobs: int) -> tuple[list[str], float]:
    """Fill the store up to ``traces`` audited traces (``long`` of them 1,000 steps); returns the
    long ids. A trace stored but not yet audited (an interrupted run) is audited now."""
    store = open_store(url)
    templates = real_traces()
    have = {ev.payload["report"]["trace_id"] for ev in store.read_all(types=["ReportFiled"])}
    store.close()
    todo: list[tuple[str, int]] = [("long", k) for k in range(long)]
    todo += [("copy", i) for i in range(traces - long)]
    long_ids = [long_trace(k, templates).header.trace_id for k in range(long)]
    ids = long_ids + [copy_of(templates[i % len(templates)], i).header.trace_id for i in range(traces - long)]
    todo = [job for job, tid in zip(todo, ids, strict=True) if tid not in have]  # audited: done
    start = time.perf_counter()
    if todo:
        print(f"seeding {len(todo)} traces with {jobs} processes (real audits; resumable) ...", flush=True)
        done = 0
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(url,)) as pool:
            for _ in pool.map(_seed_one, todo, chunksize=8):
                done += 1
                if done % 500 == 0:
                    print(f"  {done}/{len(todo)} in {time.perf_counter() - start:.0f} s", flush=True)
    return long_ids, time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(url: str, port: int, workers: int, threads: int | None) -> subprocess.Popen:
    """`auditor serve` in its own process; returns once /health answers (the index has caught up)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor.surfaces.cli.main", "serve", "--store", url, "--port", str(port), "--log-level", "warning",
         "--workers", str(workers), *(["--threads", str(threads)] if threads else [])]
    )  # fmt: skip
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"auditor serve exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit("auditor serve did not come up within an hour")


Params = dict[str, object]
Mix = list[tuple[str, Callable[[random.Random], Params]]]


def search_mix(client: httpx.Client) -> Mix:
    """The list/search queries, with a rare and a common word and a time window from the data."""
    newest = client.get("/api/traces", params={"limit": 1, "exact_total": "true"}).json()
    total = newest["total"]
    middle = client.get("/api/traces", params={"limit": 1, "offset": total // 2}).json()["traces"][0]
    fixed: list[tuple[str, Params]] = [
        ("list newest", {"limit": 50}),
        ("list deep page", {"limit": 50, "offset": max(0, total - 60)}),
        ("framework", {"framework": "Magentic-One", "limit": 50}),
        ("participant", {"participant": "Orchestrator", "limit": 50}),
        ("findings ≥ medium", {"has_findings": "true", "severity": "medium", "limit": 50}),
        ("source", {"source": "hand-crafted", "limit": 50}),
        ("time window", {"since": middle["time"], "limit": 50}),
        ("text, rare word", {"text": "tri-rail", "limit": 50}),
        ("text, common word", {"text": "the", "limit": 50}),
        ("text + findings", {"text": "verify", "has_findings": "true", "limit": 50}),
    ]
    return [(name, lambda rng, p=params: p) for name, params in fixed]


def varied_mix(client: httpx.Client, sample: int = 300) -> Mix:
    """The same kinds of query, each request drawing its values from ``sample`` traces picked at
    random: any page, a framework, participant, source fragment, start time or task word that
    the data holds. No two requests need be alike, so nothing is answered from a warm plan."""
    total = client.get("/api/traces", params={"limit": 1, "exact_total": "true"}).json()["total"]
    pick = random.Random(7)
    rows = [
        client.get("/api/traces", params={"limit": 1, "offset": pick.randrange(total)}).json()["traces"][0]
        for _ in range(sample)
    ]
    frameworks = sorted({r["framework"] for r in rows if r["framework"]})
    participants = sorted({p for r in rows for p in r["participants"]})
    fragments = sorted(
        {part for r in rows for part in re.split(r"[/ :]+", r["source"] or "") if len(part) > 2}
    )
    words = sorted({w for r in rows for w in re.findall(r"[A-Za-z]{4,}", r["task"] or "")})
    times = sorted(r["time"] for r in rows)
    severities = ["low", "medium", "high"]
    return [
        ("list, any page", lambda rng: {"limit": 50, "offset": rng.randrange(max(1, total - 50))}),
        ("framework", lambda rng: {"framework": rng.choice(frameworks), "limit": 50}),
        ("participant", lambda rng: {"participant": rng.choice(participants), "limit": 50}),
        ("findings ≥ severity", lambda rng: {"has_findings": "true", "severity": rng.choice(severities)}),
        ("source fragment", lambda rng: {"source": rng.choice(fragments), "limit": 50}),
        ("time window", lambda rng: {"since": rng.choice(times), "limit": 50}),
        ("text, a task word", lambda rng: {"text": rng.choice(words), "limit": 50}),
        ("text, two task words", lambda rng: {"text": " ".join(rng.sample(words, 2)), "limit": 50}),
        ("text + findings", lambda rng: {"text": rng.choice(words), "has_findings": "true", "limit": 50}),
        ("text, page 2", lambda rng: {"text": rng.choice(words), "limit": 50, "offset": 50}),
    ]


class Connection:
    """One keep-alive HTTP/1.1 connection. The load generator speaks HTTP itself: a full client
    library costs more CPU per request than the server does, on the same two cores."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.head = (
            f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n\r\n"
        )
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def get(self, path: str, params: dict[str, object] | None = None) -> float:
        """GET ``path``; returns the milliseconds until the whole body arrived. Like a browser, it
        sends again on a new connection when the server had closed this one while it sat idle."""
        target = f"{path}?{urlencode(params)}" if params else path
        request = f"GET {quote(target, safe='/?=&%')} HTTP/1.1\r\n{self.head}".encode()
        start = time.perf_counter()
        fresh = self.streams is None
        if fresh:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        writer.write(request)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            if fresh:
                raise
            self.close()
            self.streams = reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        if length is None:
            raise RuntimeError(f"GET {target}: no content-length in {head[:200]!r}")
        body = await reader.readexactly(int(length.group(1)))
        if status != 200:
            raise RuntimeError(f"GET {target}: {status} {body[:300]!r}")
        return (time.perf_counter() - start) * 1000

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


Round = Callable[[list[Connection], random.Random], Awaitable[list[tuple[str, float]]]]


async def run_clients(
    port: int, token: str, clients: int, seconds: float, connections: int, one_round: Round
) -> dict[str, list[float]]:
    """``clients`` closed loops (no think time), each on its own connections, until time is up."""
    samples: dict[str, list[float]] = defaultdict(list)
    stop = time.monotonic() + seconds

    async def loop(n: int) -> None:
        rng = random.Random(n)
        conns = [Connection(port, token) for _ in range(connections)]
        try:
            while time.monotonic() < stop:
                for name, ms in await one_round(conns, rng):
                    samples[name].append(ms)
        finally:
            for c in conns:
                c.close()

    await asyncio.gather(*(loop(n) for n in range(clients)))
    return samples


async def search_phase(
    port: int, token: str, mix: Mix, clients: int, seconds: float
) -> dict[str, list[float]]:
    async def one(conns: list[Connection], rng: random.Random) -> list[tuple[str, float]]:
        name, params = rng.choice(mix)
        return [(name, await conns[0].get("/api/traces", params(rng)))]

    return await run_clients(port, token, clients, seconds, 1, one)


async def page_phase(
    port: int, token: str, pages: dict[str, str], clients: int, seconds: float
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each long trace's first visit alone (the server computes and caches its views), then the
    load. ``pages`` maps each long trace to its report, as the summary names it."""

    async def visit(conns: list[Connection], tid: str) -> list[tuple[str, float]]:
        start = time.perf_counter()
        summary, graph, steps = await asyncio.gather(
            conns[0].get(f"/api/traces/{tid}"),
            conns[1].get(f"/api/traces/{tid}/graph", {"mode": "annotated"}),
            conns[2].get(f"/api/traces/{tid}/steps", {"limit": STEP_PAGE}),
        )
        report = await conns[0].get(f"/api/reports/{pages[tid]}")
        page = (time.perf_counter() - start) * 1000
        return [
            ("summary", summary),
            ("graph", graph),
            ("steps 0–499", steps),
            ("report", report),
            ("page", page),
        ]

    first: dict[str, list[float]] = defaultdict(list)
    conns = [Connection(port, token) for _ in range(3)]
    for tid in pages:
        for name, ms in await visit(conns, tid):
            first[name].append(ms)
    for c in conns:
        c.close()

    async def one(conns: list[Connection], rng: random.Random) -> list[tuple[str, float]]:
        return await visit(conns, rng.choice(list(pages)))

    return first, await run_clients(port, token, clients, seconds, 3, one)


def processes() -> list[tuple[int, str, int, float]]:
    """(pid, command name, parent pid, user + system CPU seconds so far) of every process this
    user may read (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, tail = stat.read_text().rsplit(")", 1)
            fields = tail.split()
            cpu = (int(fields[11]) + int(fields[12])) / tick
            found.append((int(stat.parent.name), head.split("(", 1)[1], int(fields[1]), cpu))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return found


class Meter:
    """CPU of the server (with its workers under ``--workers``), of PostgreSQL and of this load
    generator over a phase. PostgreSQL counts every process this user may read (0 when it runs
    elsewhere): the server's pooled connections live through a phase, so the difference is that
    phase's queries."""

    def __init__(self, server: int) -> None:
        self.server = server
        self.start = self._read()

    def _read(self) -> tuple[float, float, float, float]:
        found = processes()
        own = os.times()
        return (
            sum(cpu for pid, _, parent, cpu in found if self.server in (pid, parent)),
            sum(cpu for _, name, _, cpu in found if name == "postgres"),
            own.user + own.system,
            time.perf_counter(),
        )

    def note(self, n: int, unit: str) -> str:
        """Rates over the phase so far, per ``unit``, and restarts the meter for the next phase."""
        end = self._read()
        server, pg, client, seconds = (b - a for a, b in zip(self.start, end, strict=True))
        self.start = end
        return (
            f"{n / seconds:.1f} {unit}s/s; CPU per {unit}: server {1000 * server / n:.1f} ms, "
            f"PostgreSQL {1000 * pg / n:.1f} ms, load generator {1000 * client / n:.1f} ms"
        )


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def table(title: str, samples: dict[str, list[float]], total_key: str, target: float, note: str) -> bool:
    print(f"\n{title} (target p95 <= {target:.0f} ms); {note}\n")
    print("| query | requests | p50 ms | p95 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, values in samples.items():
        if name != total_key:
            row = [pct(values, 50), pct(values, 95), pct(values, 99), max(values)]
            print(f"| {name} | {len(values)} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    values = samples[total_key]
    p95 = pct(values, 95)
    ok = p95 <= target
    print(
        f"| **{total_key}** | {len(values)} | {pct(values, 50):.1f} | **{p95:.1f}** | {pct(values, 99):.1f} "
        f"| {max(values):.1f} |\n\n{total_key}: p95 {p95:.1f} ms — {'meets' if ok else 'MISSES'} the target"
    )
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", default=os.environ.get("AUDITOR_BENCH_PG_URL", DEFAULT_URL))
    ap.add_argument("--traces", type=int, default=10_000, help="traces (with reports) in the store")
    ap.add_argument("--long", type=int, default=20, help="of which 1,000-step traces (for the trace page)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--workers", type=int, default=1, help="server processes (auditor serve --workers)")
    ap.add_argument("--threads", type=int, help="request threads per process (default: the server's)")
    ap.add_argument("--varied", action="store_true", help="draw each search's values from the data")
    ap.add_argument("--seconds", type=float, default=30.0, help="per phase")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="seeding processes")
    ap.add_argument("--seed-only", action="store_true", help="fill the store, measure nothing")
    args = ap.parse_args()
    if not 0 < args.long < args.traces:
        ap.error("--long must be at least 1 and less than --traces")

    long_ids, seeded_s = seed(args.pg, args.traces, args.long, args.jobs)
    if args.seed_only:
        return
    store = open_store(args.pg)
    token = create_token(store, "api-bench", ["read"])[0]
    events = store.last_position()
    store.close()
    port = free_port()
    started = time.perf_counter()
    server = start_server(args.pg, port, args.workers, args.threads)
    ready_s = time.perf_counter() - started
    try:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as c:
            mix = varied_mix(c) if args.varied else search_mix(c)
            exact = {"limit": 1, "exact_total": "true"}
            n_traces = c.get("/api/traces", params=exact).json()["total"]
            n_reports = c.get("/api/reports", params=exact).json()["total"]
            pages = {tid: c.get(f"/api/traces/{tid}").json()["report_id"] for tid in long_ids}
        load = os.getloadavg()[0]
        meter = Meter(server.pid)
        searches = asyncio.run(search_phase(port, token, mix, args.clients, args.seconds))
        searches["list/search"] = [v for name, _ in mix for v in searches.get(name, [])]
        search_note = meter.note(len(searches["list/search"]), "request")
        first, loaded = asyncio.run(page_phase(port, token, pages, args.clients, args.seconds))
        page_note = meter.note(len(loaded["page"]) + len(first["page"]), "page")
    finally:
        server.terminate()
        server.wait(30)
    print(
        f"\n{n_traces} traces ({args.long} of {LONG_STEPS} steps), {n_reports} reports, {events} events "
        f"in PostgreSQL; {args.clients} concurrent clients on loopback, {args.workers} server worker(s), "
        f"{args.seconds:.0f} s per phase; "
        f"seeding {seeded_s:.0f} s, server ready in {ready_s:.1f} s; load average {load:.2f} "
        f"on {os.cpu_count()} CPUs when the load began"
    )
    ok = table(
        "List and search: GET /api/traces", searches, "list/search", TARGETS["list/search"], search_note
    )
    title = f"Trace page of a {LONG_STEPS}-step trace under load: 3 calls at once, then the report"
    ok &= table(title, loaded, "page", TARGETS["trace page"], page_note)
    print(f"\nFirst visit of each of the {args.long} long traces, alone, before the load (views computed)\n")
    print("| call | p50 ms | max ms |\n|---|---:|---:|")
    for name, values in first.items():
        print(f"| {name} | {statistics.median(values):.1f} | {max(values):.1f} |")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
