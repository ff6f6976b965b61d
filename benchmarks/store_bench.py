"""Event-store throughput, side by side with the `eventsourcing` library's recorders.

Prints events/s for single-event appends, batches of 100 and a read of the global stream, on a
SQLite file and on PostgreSQL, for both stores on the same payloads, and the ratio ours/theirs.
We also compute the hash chain and honour idempotency keys; eventsourcing does neither.

    python benchmarks/store_bench.py [--pg postgresql://auditor:auditor@127.0.0.1:5432/auditor_test]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from auditor.core.store import open_store, resolve_url
from schemas import NewEvent

SINGLE, BATCHES, BATCH = 300, 100, 100


def payload(i: int) -> dict:
    return {
        "trace_id": "bench",
        "step": {
            "step_id": f"s{i}",
            "index": i,
            "actor": f"agent_{i % 7}",
            "recipients": [f"agent_{(i + 1) % 7}"],
            "kind": "message",
            "content": f"Step {i}: the refund of $12.50 for order 88{i} is pending approval by finance. " * 3,
        },
    }


def timed(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - start)


def interleaved(rounds: int, ours: Callable[[int], dict], theirs: Callable[[int], dict]) -> tuple[dict, dict]:
    """Alternate the two stores round by round (fresh databases each time, and which goes first
    alternates too) and keep the median, so that load from other processes on a shared machine
    hits both alike."""
    a, b = [], []
    for r in range(rounds):
        if r % 2:
            b.append(theirs(r))
            a.append(ours(r))
        else:
            a.append(ours(r))
            b.append(theirs(r))
    med = lambda runs, k: statistics.median(run[k] for run in runs)  # noqa: E731
    return {k: med(a, k) for k in a[0]}, {k: med(b, k) for k in b[0]}


def bench_ours(url: str) -> dict[str, float]:
    store = open_store(url)
    single = [
        NewEvent(type="StepRecorded", payload=payload(i), idempotency_key=f"one:{i}") for i in range(SINGLE)
    ]

    def singles() -> int:
        for i, e in enumerate(single):
            store.append("single", [e], expected_version=i)
        return SINGLE

    batches = [
        [
            NewEvent(type="StepRecorded", payload=payload(b * BATCH + j), idempotency_key=f"b:{b}:{j}")
            for j in range(BATCH)
        ]
        for b in range(BATCHES)
    ]

    def batched() -> int:
        for b, events in enumerate(batches):
            store.append(f"batch-{b}", events, expected_version=0)
        return BATCHES * BATCH

    def read() -> int:
        return sum(1 for _ in store.read_all())

    out = {"single": timed(singles), "batch100": timed(batched), "read": timed(read)}
    store.close()
    return out


def bench_eventsourcing(make_recorder: Callable[[], object]) -> dict[str, float]:
    from eventsourcing.persistence import StoredEvent

    recorder = make_recorder()
    ids = [uuid.uuid4() for _ in range(BATCHES + 1)]

    def singles() -> int:
        for i in range(SINGLE):
            state = json.dumps(payload(i)).encode()
            recorder.insert_events([StoredEvent(ids[0], i + 1, "StepRecorded", state)])
        return SINGLE

    def batched() -> int:
        for b in range(BATCHES):
            recorder.insert_events(
                [
                    StoredEvent(
                        ids[b + 1], j + 1, "StepRecorded", json.dumps(payload(b * BATCH + j)).encode()
                    )
                    for j in range(BATCH)
                ]
            )
        return BATCHES * BATCH

    def read() -> int:
        n, start = 0, 1
        while True:
            page = recorder.select_notifications(start, 2000)
            for note in page:
                json.loads(note.state)  # decode, as our reader does
            n += len(page)
            if len(page) < 2000:
                return n
            start = page[-1].id + 1

    return {"single": timed(singles), "batch100": timed(batched), "read": timed(read)}


def sqlite_recorder(path: Path) -> Callable[[], object]:
    def make() -> object:
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

        rec = SQLiteApplicationRecorder(SQLiteDatastore(str(path)))
        rec.create_table()
        return rec

    return make


def postgres_recorder(url: str, schema: str) -> Callable[[], object]:
    def make() -> object:
        from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

        u = sa.engine.make_url(resolve_url(url))
        ds = PostgresDatastore(u.database, u.host, u.port or 5432, u.username, u.password, schema=schema)
        rec = PostgresApplicationRecorder(ds)
        rec.create_table()
        return rec

    return make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("AUDITOR_TEST_PG_URL"), help="PostgreSQL URL")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are printed")
    args = parser.parse_args()
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as d:
        ours, theirs = interleaved(
            args.rounds,
            lambda r: bench_ours(f"sqlite:///{Path(d) / f'ours{r}.db'}"),
            lambda r: bench_eventsourcing(sqlite_recorder(Path(d) / f"es{r}.db")),
        )
        rows += [("sqlite file", k, ours[k], theirs[k]) for k in ours]
    if args.pg:
        admin = sa.create_engine(resolve_url(args.pg))
        schemas = [f"bench_{uuid.uuid4().hex[:8]}" for _ in range(2 * args.rounds)]
        with admin.begin() as conn:
            for name in schemas:
                conn.execute(sa.text(f"CREATE SCHEMA {name}"))
        try:
            sep = "&" if "?" in args.pg else "?"
            ours, theirs = interleaved(
                args.rounds,
                lambda r: bench_ours(f"{args.pg}{sep}options=-csearch_path%3D{schemas[2 * r]}"),
                lambda r: bench_eventsourcing(postgres_recorder(args.pg, schemas[2 * r + 1])),
            )
            rows += [("postgresql", k, ours[k], theirs[k]) for k in ours]
        finally:
            with admin.begin() as conn:
                for name in schemas:
                    conn.execute(sa.text(f"DROP SCHEMA {name} CASCADE"))
    labels = {"single": "append, 1 event", "batch100": "append, batches of 100", "read": "read global stream"}
    print(f"{'engine':<12} {'operation':<24} {'ours ev/s':>12} {'eventsourcing':>14} {'ratio':>7}")
    for engine, op, a, b in rows:
        print(f"{engine:<12} {labels[op]:<24} {a:>12,.0f} {b:>14,.0f} {a / b:>7.2f}")


if __name__ == "__main__":
    main()
