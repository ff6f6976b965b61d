"""Tampering with the event store, tried as an attacker with write access would (issue 22, item 2):
every write path that could change a stored event is refused on SQLite and PostgreSQL alike, a
dropped or altered guard is reported and never silently re-created, and a chain rewritten or cut
short behind a signed checkpoint is found by verify."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from auditor.core.errors import InputError, StoreError, VerificationFailed
from auditor.core.store import open_store, verify_chain
from auditor.core.store.anchors import (
    CheckpointSettings,
    generate_key,
    load_key,
    read_checkpoints,
    take_checkpoint,
)
from auditor.core.store.guards import check_guards, install_guards
from auditor.core.store.hashing import event_hash
from schemas import NewEvent
from tests.cli_helpers import run
from tests.conftest import REPO

COLUMNS = (
    "global_position, stream_id, stream_version, type, schema_version, payload, metadata, "
    "idempotency_key, prev_hash, hash, recorded_at"
)


def ev(n: int) -> NewEvent:
    return NewEvent(type="Thing", payload={"n": n, "text": "héllo ✓"}, idempotency_key=f"k{n}")


def snapshot(store) -> list[tuple]:
    with store.engine.connect() as conn:
        return [
            tuple(r) for r in conn.exec_driver_sql(f"SELECT {COLUMNS} FROM events ORDER BY global_position")
        ]


@pytest.fixture
def key(tmp_path: Path) -> bytes:
    generate_key(tmp_path / "checkpoint.key")
    return load_key(tmp_path / "checkpoint.key")


def copy_of(position: int, *, new_position: str = "global_position", new_stream: str = "stream_id") -> str:
    """SELECT the stored event at ``position`` as a row to insert, with its type changed."""
    return (
        f"SELECT {new_position}, {new_stream}, stream_version, 'Edited', schema_version, payload, metadata, "
        f"idempotency_key, prev_hash, hash, recorded_at FROM events WHERE global_position = {position}"
    )


NEXT = "(SELECT MAX(global_position) + 1 FROM events)"
UNKEYED_COPY = copy_of(2, new_position=NEXT).replace("idempotency_key,", "NULL,")  # collides on stream only
WRITES = {
    "sqlite": {
        "replace same position": f"INSERT OR REPLACE INTO events ({COLUMNS}) {copy_of(2)}",
        "REPLACE statement": f"REPLACE INTO events ({COLUMNS}) {copy_of(2)}",
        "replace by stream and version": f"INSERT OR REPLACE INTO events ({COLUMNS}) {UNKEYED_COPY}",
        "replace by idempotency key": f"INSERT OR REPLACE INTO events ({COLUMNS}) "
        f"{copy_of(2, new_position=NEXT, new_stream=repr('other'))}",
        "upsert on position": f"INSERT INTO events ({COLUMNS}) {copy_of(2)} "
        "ON CONFLICT (global_position) DO UPDATE SET type = excluded.type",
        "upsert on stream": f"INSERT INTO events ({COLUMNS}) {UNKEYED_COPY} "
        "ON CONFLICT (stream_id, stream_version) DO UPDATE SET payload = '{}'",
        "insert or ignore": f"INSERT OR IGNORE INTO events ({COLUMNS}) {copy_of(2)}",
        "insert behind the head": f"INSERT INTO events ({COLUMNS}) "
        f"{copy_of(2, new_position='0', new_stream=repr('other')).replace('idempotency_key,', 'NULL,')}",
    },
    "postgresql": {
        "upsert on position": f"INSERT INTO events ({COLUMNS}) {copy_of(2)} "
        "ON CONFLICT (global_position) DO UPDATE SET type = excluded.type",
        "upsert on stream": f"INSERT INTO events ({COLUMNS}) {UNKEYED_COPY} "
        "ON CONFLICT (stream_id, stream_version) DO UPDATE SET payload = '{}'",
        "merge update": "MERGE INTO events e USING (SELECT 2 AS p) s ON e.global_position = s.p "
        "WHEN MATCHED THEN UPDATE SET type = 'Edited'",
        "merge delete": "MERGE INTO events e USING (SELECT 2 AS p) s ON e.global_position = s.p "
        "WHEN MATCHED THEN DELETE",
        "truncate": "TRUNCATE events",
    },
}


@pytest.fixture
def pg_store(pg_schema_url: str) -> Iterator:
    s = open_store(pg_schema_url)
    yield s
    s.close()


def _refused(store, statement: str) -> None:
    store.append("s", [ev(i) for i in range(1, 5)])
    before = snapshot(store)
    with pytest.raises(sa.exc.DatabaseError, match="append-only"):
        store.raw_sql(statement)
    assert snapshot(store) == before
    assert verify_chain(store).ok


@pytest.mark.parametrize("case", list(WRITES["sqlite"]))
def test_every_sqlite_write_path_that_would_change_an_event_is_refused(sqlite_store, case):
    _refused(sqlite_store, WRITES["sqlite"][case])


@pytest.mark.parametrize("case", list(WRITES["postgresql"]))
def test_every_postgres_write_path_that_would_change_an_event_is_refused(pg_store, case):
    _refused(pg_store, WRITES["postgresql"][case])


def test_an_upsert_that_changes_nothing_leaves_the_store_as_it_was(store):
    """PostgreSQL's DO NOTHING writes nothing, so it may pass there; SQLite refuses it outright."""
    store.append("s", [ev(i) for i in range(1, 4)])
    before = snapshot(store)
    statement = f"INSERT INTO events ({COLUMNS}) {copy_of(2)} ON CONFLICT DO NOTHING"
    if store.dialect == "sqlite":
        with pytest.raises(sa.exc.DatabaseError, match="append-only"):
            store.raw_sql(statement)
    else:
        store.raw_sql(statement)
    assert snapshot(store) == before


def test_appends_still_chain_and_redeliveries_still_dedupe_under_the_insert_guard(store):
    first = store.append("s", [ev(1), ev(2)])
    again = store.append("s", [ev(2), ev(3)])  # the stored key trips the guard, the retry looks it up
    assert [r.global_position for r in again] == [first[1].global_position, 3]
    assert [e.payload["n"] for e in store.read_all()] == [1, 2, 3]
    assert verify_chain(store).ok


def _drop_guards(store) -> None:
    """An attacker with DDL rights removes what refuses changes."""
    if store.dialect == "postgresql":
        store.raw_sql("DROP TRIGGER events_refuse_change ON events")
    else:
        store.raw_sql("DROP TRIGGER events_refuse_update")
        store.raw_sql("DROP TRIGGER events_refuse_delete")


def _restore_guards(store) -> None:
    """...and puts them back exactly as they were, so that no guard check can tell."""
    with store.write_transaction() as conn:
        install_guards(conn)
        assert check_guards(conn) == []


def _rehash_from(store, position: int) -> None:
    """Recompute every hash from ``position`` on, as anyone who knows the (public) scheme can."""
    rows = snapshot(store)
    prev = rows[position - 2][9] if position > 1 else "0" * 64
    for r in rows[position - 1 :]:
        digest = event_hash(
            prev,
            global_position=r[0],
            stream_id=r[1],
            stream_version=r[2],
            type=r[3],
            schema_version=r[4],
            payload_json=r[5],
            metadata_json=r[6],
            idempotency_key=r[7],
            recorded_at=r[10],
        )
        store.raw_sql(
            f"UPDATE events SET prev_hash = '{prev}', hash = '{digest}' WHERE global_position = {r[0]}"
        )
        prev = digest


def test_a_chain_recomputed_after_an_edit_is_found_by_the_checkpoints(store, tmp_path, key):
    file = tmp_path / "checkpoints.jsonl"
    store.append("s", [ev(i) for i in range(1, 6)])
    assert take_checkpoint(store, file, key).position == 5
    store.append("s", [ev(i) for i in range(6, 11)])
    assert take_checkpoint(store, file, key).position == 10
    _drop_guards(store)
    store.raw_sql("UPDATE events SET payload = '{\"n\":99}' WHERE global_position = 3")
    _rehash_from(store, 3)
    _restore_guards(store)
    assert verify_chain(store).ok  # the chain alone cannot tell: this is what the anchor is for
    anchors = read_checkpoints(file, key)
    report = verify_chain(store, anchors)
    assert not report.ok and report.broken_position == 5 and "rewritten" in report.reason
    assert report.to_json()["checkpoint"]["position"] == 10
    with pytest.raises(VerificationFailed, match="rewritten"):
        take_checkpoint(store, file, key)  # a tampered head is never anchored
    assert len(read_checkpoints(file, key)) == 2


def test_events_cut_off_the_end_are_found_by_the_checkpoint(store, tmp_path, key):
    file = tmp_path / "checkpoints.jsonl"
    store.append("s", [ev(i) for i in range(1, 11)])
    take_checkpoint(store, file, key)
    _drop_guards(store)
    store.raw_sql("DELETE FROM events WHERE global_position > 7")
    report = verify_chain(store)
    assert not report.ok and report.broken_position is None and "guard lost" in report.reason
    _restore_guards(store)
    assert verify_chain(store).ok  # without the anchor, a truncated chain reads intact
    report = verify_chain(store, read_checkpoints(file, key))
    assert not report.ok and report.broken_position == 8 and "removed from the end" in report.reason
    store.append("s", [ev(i) for i in range(20, 25)])  # new events past the old head hide nothing
    report = verify_chain(store, read_checkpoints(file, key))
    assert not report.ok and report.broken_position == 10 and "rewritten" in report.reason


def test_a_checkpoint_is_taken_incrementally_and_only_when_the_head_moved(store, tmp_path, key):
    file = tmp_path / "checkpoints.jsonl"
    assert take_checkpoint(store, file, key) is None and not file.exists()  # an empty store
    store.append("s", [ev(1), ev(2)])
    first = take_checkpoint(store, file, key)
    assert (first.position, first.hash) == (2, snapshot(store)[-1][9])
    assert take_checkpoint(store, file, key) is None  # nothing new
    store.append("t", [ev(3)])
    assert take_checkpoint(store, file, key).position == 3
    report = verify_chain(store, read_checkpoints(file, key))
    assert report.ok and report.checkpoints == 2 and report.anchor.position == 3


GUARDS = {
    "sqlite": {
        "events_refuse_update": "DROP TRIGGER events_refuse_update",
        "events_refuse_delete": "DROP TRIGGER events_refuse_delete",
        "events_refuse_overwrite": "DROP TRIGGER events_refuse_overwrite",
    },
    "postgresql": {
        "events_refuse_change": "DROP TRIGGER events_refuse_change ON events",
        "events_refuse_truncate": "DROP TRIGGER events_refuse_truncate ON events",
    },
}


@pytest.mark.parametrize("trigger", list(GUARDS["sqlite"]))
def test_a_dropped_sqlite_guard_fails_the_next_open_and_is_not_recreated(tmp_path, trigger):
    _dropped_guard(f"sqlite:///{tmp_path / 'auditor.db'}", "sqlite", trigger)


@pytest.mark.parametrize("trigger", list(GUARDS["postgresql"]))
def test_a_dropped_postgres_guard_fails_the_next_open_and_is_not_recreated(pg_schema_url, trigger):
    _dropped_guard(pg_schema_url, "postgresql", trigger)


def _dropped_guard(url: str, dialect: str, trigger: str) -> None:
    store = open_store(url)
    store.append("s", [ev(1)])
    store.raw_sql(GUARDS[dialect][trigger])
    store.close()
    with pytest.raises(StoreError, match=f"lost its append-only guard: trigger {trigger} is missing"):
        open_store(url)
    inspected = open_store(url, require_guards=False)
    try:
        assert [p.trigger for p in inspected.guard_problems] == [trigger]  # still missing: not re-created
        report = verify_chain(inspected)
        assert not report.ok and report.chain_ok and trigger in report.reason
        with inspected.write_transaction() as conn:
            assert install_guards(conn) == [trigger]  # `auditor store guard`, on purpose
    finally:
        inspected.close()
    open_store(url).close()


ALTERATIONS = {
    "sqlite": [
        (
            "DROP TRIGGER events_refuse_delete",
            "CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events WHEN 0 "
            "BEGIN SELECT RAISE(ABORT, 'no'); END",
            "events_refuse_delete was altered",
        )
    ],
    "postgresql": [
        ("ALTER TABLE events DISABLE TRIGGER events_refuse_change", None, "events_refuse_change is disabled"),
        (
            "CREATE OR REPLACE FUNCTION auditor_events_refuse_change() RETURNS trigger AS $$ "
            "BEGIN RETURN NEW; END $$ LANGUAGE plpgsql",
            None,
            "no longer refuses",
        ),
        (
            "DROP TRIGGER events_refuse_change ON events",
            "CREATE TRIGGER events_refuse_change BEFORE UPDATE ON events FOR EACH ROW "
            "EXECUTE FUNCTION auditor_events_refuse_change()",
            "events_refuse_change was altered",
        ),
    ],
}


def test_an_altered_or_disabled_guard_is_reported(store, store_url):
    store.append("s", [ev(1)])
    store.close()
    for first, second, message in ALTERATIONS[store.dialect]:
        inspected = open_store(store_url, require_guards=False)
        try:
            inspected.raw_sql(first)
            if second:
                inspected.raw_sql(second)
            with pytest.raises(StoreError, match=message):
                open_store(store_url)
            assert message in verify_chain(inspected).reason
            with inspected.write_transaction() as conn:
                install_guards(conn)
        finally:
            inspected.close()
        open_store(store_url).close()


def test_checkpoint_lines_are_signed(store, tmp_path, key):
    file = tmp_path / "checkpoints.jsonl"
    store.append("s", [ev(1), ev(2)])
    take_checkpoint(store, file, key)
    line = json.loads(file.read_text())
    other = tmp_path / "other.key"
    generate_key(other)
    with pytest.raises(VerificationFailed, match="signed with another key"):
        read_checkpoints(file, load_key(other))
    forged = tmp_path / "forged.jsonl"
    forged.write_text(json.dumps({**line, "position": 1}) + "\n")
    with pytest.raises(VerificationFailed, match="line 1: the checkpoint's signature does not match"):
        read_checkpoints(forged, key)
    forged.write_text(file.read_text() + json.dumps({**line, "hash": "ab"}) + "\n")
    with pytest.raises(InputError, match="line 2, field 'hash'"):
        read_checkpoints(forged, key)
    forged.write_text("{not json\n")
    with pytest.raises(InputError, match=r"forged\.jsonl, line 1: not a JSON checkpoint"):
        read_checkpoints(forged, key)
    with pytest.raises(InputError, match="the checkpoint file does not exist"):
        read_checkpoints(tmp_path / "nope.jsonl", key)


def test_a_missing_or_weak_key_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("AUDITOR_CHECKPOINT_KEY_FILE", raising=False)
    with pytest.raises(InputError, match="no checkpoint key") as missing:
        load_key(None)
    assert "AUDITOR_CHECKPOINT_KEY_FILE" in missing.value.one_line()
    with pytest.raises(InputError, match=r"nope\.key: the checkpoint key file does not exist"):
        load_key(tmp_path / "nope.key")
    (tmp_path / "short.key").write_text("secret\n")
    with pytest.raises(InputError, match="holds 6 bytes; at least 32"):
        load_key(tmp_path / "short.key")
    generate_key(tmp_path / "good.key")
    assert (tmp_path / "good.key").stat().st_mode & 0o077 == 0
    with pytest.raises(InputError, match="never overwritten"):
        generate_key(tmp_path / "good.key")
    monkeypatch.setenv("AUDITOR_CHECKPOINT_FILE", str(tmp_path / "cp.jsonl"))
    with pytest.raises(InputError, match="no checkpoint key"):
        CheckpointSettings.from_env()
    monkeypatch.setenv("AUDITOR_CHECKPOINT_KEY_FILE", str(tmp_path / "good.key"))
    monkeypatch.setenv("AUDITOR_CHECKPOINT_EVERY", "soon")
    with pytest.raises(InputError, match="field 'AUDITOR_CHECKPOINT_EVERY'"):
        CheckpointSettings.from_env()
    monkeypatch.setenv("AUDITOR_CHECKPOINT_EVERY", "30")
    settings = CheckpointSettings.from_env()
    assert settings.every_s == 30 and settings.path == tmp_path / "cp.jsonl"
    assert "key=" not in repr(settings)


EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


def test_cli_checkpoint_verify_and_guard_on_a_tampered_store(tmp_path):
    import sqlite3

    assert run(["ingest", str(EXAMPLE)], tmp_path).returncode == 0
    no_key = run(["store", "checkpoint", "--file", "cp.jsonl"], tmp_path)
    assert (
        no_key.returncode == 2 and "no checkpoint key" in no_key.stderr and "Traceback" not in no_key.stderr
    )
    assert run(["store", "keygen", "cp.key"], tmp_path).returncode == 0
    anchor = ["--key-file", "cp.key"]
    taken = run(["store", "checkpoint", "--file", "cp.jsonl", *anchor, "--json"], tmp_path)
    assert taken.returncode == 0 and json.loads(taken.stdout)["position"] == 9
    verified = run(["store", "verify", "--checkpoints", "cp.jsonl", *anchor, "--json"], tmp_path)
    assert verified.returncode == 0 and json.loads(verified.stdout)["checkpoint"]["position"] == 9
    signed = (tmp_path / "cp.jsonl").read_text()
    (tmp_path / "cp.jsonl").write_text(signed.replace('"position":9', '"position":8'))
    forged = run(["store", "verify", "--checkpoints", "cp.jsonl", *anchor, "--json"], tmp_path)
    assert forged.returncode == 1 and "altered or forged" in json.loads(forged.stdout)["reason"]
    (tmp_path / "cp.jsonl").write_text(signed)

    db = sqlite3.connect(tmp_path / "auditor.db")
    with db:  # cut the last two events off
        db.execute("DROP TRIGGER events_refuse_delete")
        db.execute("DELETE FROM events WHERE global_position > 7")
    db.close()
    refused = run(["traces", "list"], tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "trigger events_refuse_delete is missing" in refused.stderr
    lost = run(["store", "verify"], tmp_path)
    assert lost.returncode == 1 and "guard lost" in lost.stdout
    cut = run(["store", "verify", "--checkpoints", "cp.jsonl", *anchor], tmp_path)
    assert cut.returncode == 1 and "broken at global position 8" in cut.stdout
    assert "removed from the end" in cut.stdout
    guard = run(["store", "guard", "--checkpoints", "cp.jsonl", *anchor], tmp_path)
    assert guard.returncode == 1 and "refused" in guard.stdout  # never re-armed over a cut chain
    assert run(["traces", "list"], tmp_path).returncode == 2


@pytest.mark.kafka
@pytest.mark.slow
def test_audit_workers_checkpoint_the_store_periodically(tmp_path, key):
    from auditor.audit.workers import AuditWorker, WorkerConfig, rules_audit
    from tests.stream_support import kafka_bootstrap, new_topics, running, wait_until

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "closed", "reports", "alerts")
    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    file = tmp_path / "checkpoints.jsonl"
    config = WorkerConfig(
        bootstrap,
        t["closed"],
        f"w-{t['closed']}",
        t["reports"],
        t["alerts"],
        poll_ms=50,
        checkpoints=CheckpointSettings(file, key, every_s=0.2),
    )
    worker = AuditWorker(store, config, audit=rules_audit)

    def anchored() -> int:
        return max((c.position for c in read_checkpoints(file, key)), default=0) if file.exists() else 0

    try:
        store.append("s", [ev(i) for i in range(1, 4)])
        with running(worker):
            wait_until(lambda: anchored() == 3, 30, "a checkpoint of the first head")
            store.append("s", [ev(i) for i in range(4, 9)])
            wait_until(lambda: anchored() == 8, 30, "a checkpoint of the moved head")
            lines = file.read_text()
            store.raw_sql("DROP TRIGGER events_refuse_delete")
            store.raw_sql("DELETE FROM events WHERE global_position > 6")
            store.append("s", [ev(i) for i in range(20, 23)])  # positions 7..9: a head past the anchor
            wait_until(
                lambda: worker.metrics.value("checkpoints_total", outcome="refused") > 0, 30, "a refusal"
            )
        assert file.read_text() == lines  # the rewritten chain was never anchored
        assert worker.metrics.value("checkpoints_total", outcome="written") == 2
    finally:
        store.close()
