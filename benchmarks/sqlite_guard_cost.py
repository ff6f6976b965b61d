"""What a SQLite append pays for the insert guard, and what the database's own settings change.

The figures docs/store.md gives for the guard: µs per row to insert 100 prepared rows in one
transaction (the store's own multi-row statements) on scratch stores made by the store itself, with
the guard as shipped, without it, with a trigger that does nothing (``WHEN 0``: what running a
BEFORE INSERT trigger costs at all), an AFTER INSERT trigger that does nothing, and the guard on
stores with larger pages or a WAL checkpointed less often; with and without the commit. The best
of ``--rounds`` runs per variant.

    python benchmarks/sqlite_guard_cost.py [--rounds 3] [--rows 10000]

The files go to the temporary directory (TMPDIR): TMPDIR=/dev/shm times the CPU alone.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from itertools import chain
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.core.store import open_store
from auditor.core.store.hashing import GENESIS_HASH, compact_json
from auditor.core.store.recorder import SQLiteRecorder

BATCH = 100
GUARD = "events_refuse_overwrite"
NOTHING = "SELECT RAISE(ABORT, 'never')"
# variant -> (page size, the statements that replace the guard on the scratch store)
VARIANTS: dict[str, tuple[int, list[str]]] = {
    "guard (as shipped)": (4096, []),
    "no insert trigger": (4096, [f"DROP TRIGGER {GUARD}"]),
    "BEFORE INSERT WHEN 0": (
        4096,
        [f"DROP TRIGGER {GUARD}", f"CREATE TRIGGER idle BEFORE INSERT ON events WHEN 0 BEGIN {NOTHING}; END"],
    ),
    "AFTER INSERT WHEN 0": (
        4096,
        [f"DROP TRIGGER {GUARD}", f"CREATE TRIGGER idle AFTER INSERT ON events WHEN 0 BEGIN {NOTHING}; END"],
    ),
    "guard, 8 KiB pages": (8192, []),
    "guard, 16 KiB pages": (16384, []),
    "guard, WAL of 4,000 pages": (4096, ["PRAGMA wal_autocheckpoint=4000"]),
}


def scratch_store(path: Path, page_size: int, statements: list[str]) -> sqlite3.Connection:
    """A store made by the store itself at ``page_size``, its guard replaced as ``statements`` say,
    opened as the store opens its writer (WAL, synchronous=FULL, transactions begun by hand)."""
    with sqlite3.connect(path) as empty:
        empty.execute(f"PRAGMA page_size={page_size}")
        empty.execute("VACUUM")  # an empty database takes the page size only when written
    open_store(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    for statement in statements:
        conn.execute(statement)
    return conn


def rows(n: int) -> list[tuple]:
    """Chained-looking rows (the hashes are placeholders: no trigger reads them), 100 per stream."""
    at = "2026-12-06T05:00:00.000000+00:00"
    return [
        (
            p,
            f"batch-{(p - 1) // BATCH}",
            (p - 1) % BATCH + 1,
            "StepRecorded",
            1,
            compact_json(
                {"step": {"index": p, "content": f"Step {p}: the refund is pending approval. " * 8}}
            ),
            "{}",
            f"b:{p}",
            GENESIS_HASH,
            f"{p:064x}",
            at,
        )
        for p in range(1, n + 1)
    ]


def run(conn: sqlite3.Connection, all_rows: list[tuple]) -> tuple[float, float]:
    """µs per row: inserting alone, and inserting with the commit."""
    statements = SQLiteRecorder().insert_many
    inserting = total = 0.0
    for start in range(0, len(all_rows), BATCH):
        batch = all_rows[start : start + BATCH]
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        t = time.perf_counter()
        at = 0
        for n in sorted(statements, reverse=True):
            while len(batch) - at >= n:
                conn.execute(statements[n], list(chain.from_iterable(batch[at : at + n])))
                at += n
        inserting += time.perf_counter() - t
        conn.execute("COMMIT")
        total += time.perf_counter() - began
    return inserting / len(all_rows) * 1e6, total / len(all_rows) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs per variant; the best is printed")
    parser.add_argument("--rows", type=int, default=10_000, help="rows per run (100 per transaction)")
    args = parser.parse_args()
    prepared = rows(args.rows)
    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            for i, (name, (page_size, statements)) in enumerate(VARIANTS.items()):
                conn = scratch_store(Path(d) / f"{r}-{i}.db", page_size, statements)
                try:
                    figures = run(conn, prepared)
                finally:
                    conn.close()
                best[name] = min(best.get(name, figures), figures)
    print(f"µs per row, {BATCH} rows per transaction, best of {args.rounds} ({tempfile.gettempdir()})")
    print(f"{'variant':<26} {'insert':>8} {'+ commit':>9}")
    for name, (inserting, total) in best.items():
        print(f"{name:<26} {inserting:>8.2f} {total:>9.2f}")


if __name__ == "__main__":
    main()
