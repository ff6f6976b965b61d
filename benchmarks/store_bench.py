"""Event-store throughput, side by side with the `eventsourcing` library's recorders.

Prints events/s for single-event appends, batches of 100 and a read of the global stream, on a
SQLite file and on PostgreSQL, for both stores on the same payloads, and the ratio ours/theirs.
We also compute the hash chain, honour idempotency keys, keep three indexes and (SQLite) run the
append-only guard trigger on every row; eventsourcing does none of these. Both get the same
durability: SQLite in WAL with synchronous=FULL (the library's default on this build is FULL;
the script prints both), PostgreSQL as each connects.

The payload dicts are built before timing. Timed for ours: ``append`` of ready NewEvents (the
payload is encoded inside); for theirs: json.dumps of the payload, its StoredEvent and
``insert_events`` (their recorder takes encoded events only).

The machine is shared, so both stores run step by step in turn (an append of ours, one of theirs,
who goes first alternating), each round on fresh databases: a burst of load from other processes
lands on both alike. Each round gives a ratio per row; the table shows the median over rounds and
the lowest and highest ratio.

    python benchmarks/store_bench.py [--pg postgresql://auditor:auditor@127.0.0.1:5432/auditor_test]

The SQLite files go to the temporary directory (TMPDIR): on a disk, the rows time fsync as well; with
TMPDIR=/dev/shm they time the CPU alone. ``--without guard`` / ``--without type-index`` drop that part
of the schema from our SQLite stores (scratch files, never a real store) to measure what it costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.core.store import EventStore, open_store, resolve_url
from schemas import NewEvent

SINGLE, BATCHES, BATCH, READS = 300, 100, 100, 3
OPERATIONS = {"single": "append, 1 event", "batch100": "append, batches of 100", "read": "read global stream"}

# What --without drops from our scratch SQLite stores: the insert guard (a BEFORE INSERT row
# trigger) and the index of event types.
WITHOUT = {"guard": "DROP TRIGGER events_refuse_overwrite", "type-index": "DROP INDEX ix_events_type"}

Step = Callable[[], int]  # one unit of work; returns the events it wrote or read
Workload = dict[str, list[Step]]  # the steps of each operation, in order


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


PAYLOADS = [payload(i) for i in range(SINGLE + BATCHES * BATCH)]


def race(ours: list[Step], theirs: list[Step]) -> tuple[float, float]:
    """Events/s of each side, running their steps pairwise in turn (who goes first alternates)."""
    spent, done = [0.0, 0.0], [0, 0]
    for i, pair in enumerate(zip(ours, theirs, strict=True)):
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            done[side] += pair[side]()
            spent[side] += time.perf_counter() - start
    return done[0] / spent[0], done[1] / spent[1]


def our_workload(store: EventStore) -> Workload:
    singles = [
        NewEvent(type="StepRecorded", payload=PAYLOADS[i], idempotency_key=f"one:{i}") for i in range(SINGLE)
    ]
    batches = [
        [
            NewEvent(
                type="StepRecorded", payload=PAYLOADS[SINGLE + b * BATCH + j], idempotency_key=f"b:{b}:{j}"
            )
            for j in range(BATCH)
        ]
        for b in range(BATCHES)
    ]

    def single(i: int) -> Step:
        return lambda: len(store.append("single", [singles[i]], expected_version=i))

    def batch(b: int) -> Step:
        return lambda: len(store.append(f"batch-{b}", batches[b], expected_version=0))

    def read() -> int:
        return sum(1 for _ in store.read_all())

    return {
        "single": [single(i) for i in range(SINGLE)],
        "batch100": [batch(b) for b in range(BATCHES)],
        "read": [read] * READS,
    }


def their_workload(recorder: Any) -> Workload:
    from eventsourcing.persistence import StoredEvent

    ids = [uuid.uuid4() for _ in range(BATCHES + 1)]

    def single(i: int) -> Step:
        def step() -> int:
            state = json.dumps(PAYLOADS[i]).encode()
            recorder.insert_events([StoredEvent(ids[0], i + 1, "StepRecorded", state)])
            return 1

        return step

    def batch(b: int) -> Step:
        def step() -> int:
            first = SINGLE + b * BATCH
            recorder.insert_events(
                [
                    StoredEvent(ids[b + 1], j + 1, "StepRecorded", json.dumps(PAYLOADS[first + j]).encode())
                    for j in range(BATCH)
                ]
            )
            return BATCH

        return step

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

    return {
        "single": [single(i) for i in range(SINGLE)],
        "batch100": [batch(b) for b in range(BATCHES)],
        "read": [read] * READS,
    }


def sqlite_recorder(path: Path) -> Any:
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    rec = SQLiteApplicationRecorder(SQLiteDatastore(str(path)))
    rec.create_table()
    return rec


def postgres_recorder(url: str, schema: str) -> Any:
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

    u = sa.engine.make_url(resolve_url(url))
    ds = PostgresDatastore(u.database, u.host, u.port or 5432, u.username, u.password, schema=schema)
    rec = PostgresApplicationRecorder(ds)
    rec.create_table()
    return rec


def durability(pragma: Callable[[str], Any]) -> str:
    """The journal mode and synchronous level a SQLite connection writes with (``pragma``: a
    PRAGMA's value on that connection)."""
    level = ["OFF", "NORMAL", "FULL", "EXTRA"][pragma("synchronous")]
    return f"journal_mode={pragma('journal_mode')}, synchronous={level}"


def their_pragma(cur: Any) -> Callable[[str], Any]:
    def pragma(name: str) -> Any:
        cur.execute(f"PRAGMA {name}")
        return cur.fetchone()[0]

    return pragma


def measure(
    rounds: int, ours: Callable[[int], Workload], theirs: Callable[[int], Workload]
) -> dict[str, list]:
    """Per operation, each round's (ours, theirs) events/s on fresh stores."""
    runs: dict[str, list] = {op: [] for op in OPERATIONS}
    for r in range(rounds):
        a, b = ours(r), theirs(r)
        for op in OPERATIONS:
            runs[op].append(race(a[op], b[op]))
    return runs


@contextmanager
def pg_schemas(url: str, n: int) -> Iterator[list[str]]:
    """``n`` fresh PostgreSQL schemas, dropped afterwards."""
    admin = sa.create_engine(resolve_url(url))
    names = [f"bench_{uuid.uuid4().hex[:8]}" for _ in range(n)]
    with admin.begin() as conn:
        for name in names:
            conn.execute(sa.text(f"CREATE SCHEMA {name}"))
    try:
        yield names
    finally:
        with admin.begin() as conn:
            for name in names:
                conn.execute(sa.text(f"DROP SCHEMA {name} CASCADE"))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("AUDITOR_TEST_PG_URL"), help="PostgreSQL URL")
    parser.add_argument("--rounds", type=int, default=5, help="rounds on fresh stores; medians are printed")
    parser.add_argument(
        "--without",
        action="append",
        choices=sorted(WITHOUT),
        default=[],
        help="drop this part of our SQLite stores' schema, to measure what it costs (repeatable)",
    )
    args = parser.parse_args()
    results: list[tuple[str, dict[str, list]]] = []
    with tempfile.TemporaryDirectory() as d, ExitStack() as opened:
        stores = [
            opened.enter_context(closing(open_store(f"sqlite:///{Path(d) / f'ours{r}.db'}")))
            for r in range(args.rounds)
        ]
        for store in stores:
            for part in args.without:
                store.raw_sql(WITHOUT[part])
        recorders = [sqlite_recorder(Path(d) / f"es{r}.db") for r in range(args.rounds)]
        results.append(
            (
                "sqlite file",
                measure(
                    args.rounds, lambda r: our_workload(stores[r]), lambda r: their_workload(recorders[r])
                ),
            )
        )
        with stores[0].reading() as ours, recorders[0].datastore.transaction(commit=False) as cur:
            print(
                f"sqlite: ours {durability(lambda name: ours.execute(f'PRAGMA {name}')[0][0])}; "
                f"eventsourcing {durability(their_pragma(cur))}"
                + (
                    f"; ours WITHOUT {', '.join(args.without)} (not the store as shipped)"
                    if args.without
                    else ""
                )
            )
    if args.pg:
        with pg_schemas(args.pg, 2 * args.rounds) as schemas, ExitStack() as opened:
            sep = "&" if "?" in args.pg else "?"
            results.append(
                (
                    "postgresql",
                    measure(
                        args.rounds,
                        lambda r: our_workload(
                            opened.enter_context(
                                closing(open_store(f"{args.pg}{sep}options=-csearch_path%3D{schemas[2 * r]}"))
                            )
                        ),
                        lambda r: their_workload(postgres_recorder(args.pg, schemas[2 * r + 1])),
                    ),
                )
            )
    print(f"{args.rounds} rounds, medians; ratio = ours/theirs, median [lowest–highest round]")
    print(
        f"{'engine':<12} {'operation':<24} {'ours ev/s':>10} {'eventsourcing':>14} {'ratio':>6} {'spread':>13}"
    )
    for engine, runs in results:
        for op, label in OPERATIONS.items():
            pairs = runs[op]
            ratios = [a / b for a, b in pairs]
            a, b = (statistics.median(p[k] for p in pairs) for k in (0, 1))
            spread = f"[{min(ratios):.2f}–{max(ratios):.2f}]"
            print(
                f"{engine:<12} {label:<24} {a:>10,.0f} {b:>14,.0f} {statistics.median(ratios):>6.2f} {spread:>13}"
            )


if __name__ == "__main__":
    main()
