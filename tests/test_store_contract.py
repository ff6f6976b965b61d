"""The event store's contract, run on SQLite and PostgreSQL alike."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from auditor.core.errors import ConcurrencyError
from auditor.core.store import catch_up, open_store, rebuild, verify_chain
from auditor.core.store.traces import TracesProjection, append_trace, list_traces, load_trace, traces_view
from schemas import NewEvent, TraceHeader, TraceStep


def ev(n: int, key: str | None = None) -> NewEvent:
    return NewEvent(type="Thing", payload={"n": n, "text": "héllo ✓"}, idempotency_key=key)


def test_append_and_read_back(store):
    recorded = store.append("s-1", [ev(1), ev(2)], expected_version=0)
    assert [r.stream_version for r in recorded] == [1, 2]
    assert [r.global_position for r in recorded] == [1, 2]
    store.append("s-2", [ev(3)], expected_version=0)
    assert [e.payload["n"] for e in store.read_stream("s-1")] == [1, 2]
    assert [e.global_position for e in store.read_all()] == [1, 2, 3]
    assert [e.payload["n"] for e in store.read_all(from_position=2)] == [2, 3]
    assert store.stream_version("s-1") == 2 and store.stream_version("nope") == 0
    assert store.list_streams("s-") == ["s-1", "s-2"]
    assert recorded[1].prev_hash == recorded[0].hash


def test_concurrency_conflict_is_clear(store):
    store.append("s", [ev(1)], expected_version=0)
    with pytest.raises(ConcurrencyError) as info:
        store.append("s", [ev(2)], expected_version=0)
    assert "expected 0" in str(info.value) and "version 1" in str(info.value)
    assert store.stream_version("s") == 1


def test_concurrent_writers_one_wins(store_url):
    results: list[str] = []

    def writer(i: int) -> None:
        s = open_store(store_url)
        try:
            s.append("race", [ev(i)], expected_version=0)
            results.append("ok")
        except ConcurrencyError:
            results.append("conflict")
        finally:
            s.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict", "conflict", "conflict", "ok"]


def test_idempotent_reappend_returns_original_position(store):
    first = store.append("s", [ev(1, "k1"), ev(2, "k2")])
    again = store.append("s", [ev(1, "k1")])
    assert again[0].global_position == first[0].global_position
    mixed = store.append("s", [ev(2, "k2"), ev(3, "k3")])
    assert mixed[0].global_position == first[1].global_position
    assert mixed[1].stream_version == 3
    assert store.stream_version("s") == 3
    # a re-delivered batch with a stale expected version is still a no-op, not a conflict
    assert store.append("s", [ev(1, "k1")], expected_version=0)[0].global_position == 1


def test_bad_event_late_in_batch_appends_nothing(store):
    store.append("s", [ev(0, "dup")])
    bad = [ev(1), NewEvent(type="Thing", payload={"x": float("nan")})]
    with pytest.raises(ValueError):
        store.append("s", bad)
    assert store.stream_version("s") == 1  # nothing of the failed batch landed


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_number_is_refused_and_its_spelling_in_text_is_kept(store, value):
    """The fast encoder writes a non-finite float as NaN or Infinity, which is no JSON: wherever it
    sits (deep in the payload, in the metadata) the append is refused; the same words in text are
    stored as written."""
    with pytest.raises(ValueError):
        store.append("s", [NewEvent(type="Thing", payload={"deep": [1, {"x": value}]})])
    with pytest.raises(ValueError):
        store.append("s", [NewEvent(type="Thing", payload={}, metadata={"score": value})])
    text = {"a": "NaN", "b": "-Infinity", "c": "Not a number, Inf"}
    (recorded,) = store.append("s", [NewEvent(type="Thing", payload=text)], expected_version=0)
    assert recorded.payload == text == next(store.read_stream("s")).payload
    assert verify_chain(store).ok


def test_large_batch_reads_back_in_order_and_chained(store):
    # 127 events: SQLite inserts them by multi-row statements of every size it has (64 … 1 rows)
    recorded = store.append("s", [ev(i, f"k{i}") for i in range(127)], expected_version=0)
    store.append("t", [ev(i) for i in range(70)], expected_version=0)
    assert [r.stream_version for r in recorded] == list(range(1, 128))
    assert [e.payload["n"] for e in store.read_stream("s")] == list(range(127))
    assert [e.global_position for e in store.read_all()] == list(range(1, 198))
    assert [e.idempotency_key for e in store.read_stream("s")] == [f"k{i}" for i in range(127)]
    assert verify_chain(store).ok


def test_stored_key_in_a_late_part_of_a_batch_leaves_no_early_part_behind(store):
    # the optimistic insert fails on the last event's stored key after the statements before it
    # ran: the redo must find none of their rows
    first = store.append("s", [ev(0, "stored")])[0]
    batch = [ev(i, f"k{i}") for i in range(1, 100)] + [ev(100, "stored")]
    recorded = store.append("t", batch, expected_version=0)
    assert recorded[-1] == first and [r.stream_version for r in recorded[:-1]] == list(range(1, 100))
    assert [e.global_position for e in store.read_all()] == list(range(1, 101))
    assert store.stream_version("t") == 99 and verify_chain(store).ok


@pytest.mark.parametrize("statement", ["UPDATE events SET type = 'Edited'", "DELETE FROM events"])
def test_database_refuses_update_and_delete(store, statement):
    store.append("s", [ev(1)])
    with pytest.raises(sa.exc.DatabaseError, match="append-only"):
        store.raw_sql(statement)
    assert [e.type for e in store.read_all()] == ["Thing"]


def _drop_triggers(store) -> None:
    if store.dialect == "postgresql":
        store.raw_sql("DROP TRIGGER events_refuse_change ON events")
    else:
        store.raw_sql("DROP TRIGGER events_refuse_update")
        store.raw_sql("DROP TRIGGER events_refuse_delete")


def test_verify_finds_tampered_event(store):
    store.append("s", [ev(i) for i in range(5)])
    assert verify_chain(store).ok
    _drop_triggers(store)  # an attacker with DDL rights
    store.raw_sql("UPDATE events SET payload = '{\"n\":99}' WHERE global_position = 3")
    report = verify_chain(store)
    assert not report.ok and report.broken_position == 3 and "edited" in report.reason


def test_verify_finds_removed_event(store):
    store.append("s", [ev(i) for i in range(5)])
    _drop_triggers(store)
    store.raw_sql("DELETE FROM events WHERE global_position = 4")
    report = verify_chain(store)
    assert not report.ok and report.broken_position == 4 and "missing" in report.reason


def test_global_stream_pages_over_gaps_and_reads_appends_made_meanwhile(store, monkeypatch):
    from auditor.core.store import eventstore

    monkeypatch.setattr(eventstore, "_READ_BATCH", 4)  # pages of four positions
    store.append("s", [ev(i) for i in range(1, 11)])
    assert [e.global_position for e in store.read_all(from_position=0)] == list(range(1, 11))
    assert [e.payload["n"] for e in store.read_all(from_position=6)] == [6, 7, 8, 9, 10]
    _drop_triggers(store)
    store.raw_sql("DELETE FROM events WHERE global_position IN (2, 5, 6, 7, 8)")  # a tampered store
    assert [e.global_position for e in store.read_all()] == [1, 3, 4, 9, 10]
    reader = store.read_all()
    first = [next(reader) for _ in range(3)]  # the first page, [1, 5): 1, 3, 4
    store.append("t", [ev(i) for i in range(11, 21)])  # positions 11..20, while the reader is paused
    assert [e.global_position for e in first + list(reader)] == [1, 3, 4, 9, 10, *range(11, 21)]


def _trace(tid: str, n: int, actors=("a", "b")) -> tuple[TraceHeader, list[TraceStep]]:
    header = TraceHeader(trace_id=tid, source="test")
    steps = [
        TraceStep(step_id=f"s{i}", index=i, actor=actors[i % len(actors)], content=f"m{i}") for i in range(n)
    ]
    return header, steps


def test_trace_roundtrip_and_idempotent_ingest(store):
    header, steps = _trace("t1", 7)
    first = append_trace(store, header, steps)
    assert (first.appended, first.already_present) == (8, 0)
    second = append_trace(store, header, steps)
    assert (second.appended, second.already_present) == (0, 8)
    trace = load_trace(store, "t1")
    assert trace.steps == steps and trace.header == header


def _view_rows(store) -> list[dict]:
    with store.engine.connect() as conn:
        return [
            dict(r) for r in conn.execute(sa.select(traces_view).order_by(traces_view.c.trace_id)).mappings()
        ]


def test_projection_rebuild_equals_incremental(store):
    projection = TracesProjection()
    for i in range(3):
        append_trace(store, *_trace(f"t{i}", 3 + i, actors=("x", "y", f"z{i}")))
        catch_up(store, projection)  # incremental, one trace at a time
    append_trace(store, *_trace("t0", 3, actors=("x", "y", "z0")))  # re-delivery changes nothing
    catch_up(store, projection)
    incremental = _view_rows(store)
    assert [r["steps"] for r in incremental] == [3, 4, 5]
    assert rebuild(store, projection) == 3 + 3 + 4 + 5
    assert _view_rows(store) == incremental
    assert [t.trace_id for t in list_traces(store)] == ["t0", "t1", "t2"]


def test_concurrent_catch_ups_apply_each_event_once(store, store_url):
    """Server workers sharing a store catch up the same view at once, each with its own
    connection: every step is counted once, whoever applies it."""
    for i in range(6):
        append_trace(store, *_trace(f"t{i}", 20 + i, actors=("x", "y")))
    stores = [open_store(store_url) for _ in range(4)]
    applied: list[int] = []
    errors: list[BaseException] = []
    gate = threading.Barrier(len(stores))

    def run(s) -> None:
        try:
            gate.wait()
            applied.append(catch_up(s, TracesProjection(), batch=7))  # many small commits interleave
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    assert errors == []
    assert sum(applied) == sum(20 + i + 1 for i in range(6))  # each step and each start, once in all
    assert [r["steps"] for r in _view_rows(store)] == [20 + i for i in range(6)]
