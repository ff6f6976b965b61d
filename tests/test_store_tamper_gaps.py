"""Tamper gaps of the store found by the second hostile test (issue 31, item 7), each tried on
SQLite and PostgreSQL as an attacker with write (and DDL) access would: a trigger or rule that
silently drops chosen inserts, an idempotency key changed between NULL and '', a BLOB where text
belongs, a guard dropped together with the schema's version row, and a NULL version row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from auditor.core.errors import StoreError
from auditor.core.store import open_store, resolve_url, verify_chain
from auditor.core.store.anchors import generate_key, load_key, read_checkpoints, take_checkpoint
from auditor.surfaces.server.tokens import create_token, load_tokens, revoke_token
from schemas import NewEvent
from tests.cli_helpers import run
from tests.test_store_tamper import _drop_guards, _restore_guards

# A trigger or rule that swallows revocations: no error, no event.
SWALLOW = {
    "sqlite": [
        "CREATE TRIGGER keep_tokens BEFORE INSERT ON events WHEN NEW.type = 'TokenRevoked' "
        "BEGIN SELECT RAISE(IGNORE); END"
    ],
    "postgresql": [
        "CREATE RULE keep_tokens AS ON INSERT TO events WHERE NEW.type = 'TokenRevoked' DO INSTEAD NOTHING"
    ],
}
# A trigger that skips every insert (PostgreSQL: a row trigger returning NULL), batches included.
SKIP_ALL = {
    "sqlite": ["CREATE TRIGGER keep_rows BEFORE INSERT ON events BEGIN SELECT RAISE(IGNORE); END"],
    "postgresql": [
        "CREATE FUNCTION keep_rows() RETURNS trigger AS $$ BEGIN RETURN NULL; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER keep_rows BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION keep_rows()",
    ],
}


@pytest.fixture
def engine(store_url: str) -> Iterator[sa.Engine]:
    """A plain connection to the store's database, for what an attacker runs beside the store."""
    open_store(store_url).close()
    e = sa.create_engine(resolve_url(store_url))
    yield e
    e.dispose()


def execute(engine: sa.Engine, *statements: str) -> None:
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)


def ev(n: int, key: str | None = None) -> NewEvent:
    return NewEvent(type="Thing", payload={"n": n}, idempotency_key=key)


def test_a_swallowing_trigger_or_rule_is_refused_at_open_named_by_verify_and_removed_by_guard(
    store_url: str, engine: sa.Engine, tmp_path: Path
) -> None:
    dialect = engine.dialect.name
    execute(engine, *SWALLOW[dialect])
    with pytest.raises(StoreError, match="keep_tokens is not one of the store's guards"):
        open_store(store_url)
    verified = run(["--store", store_url, "store", "verify"], tmp_path)
    kind = "rule" if dialect == "postgresql" else "trigger"
    assert verified.returncode == 1 and "Traceback" not in verified.stderr
    assert f"{kind} keep_tokens is not one of the store's guards" in verified.stdout
    revoked = run(["--store", store_url, "tokens", "revoke", "abc"], tmp_path)
    assert revoked.returncode == 2 and "keep_tokens" in revoked.stderr  # never exit 0
    guarded = run(["--store", store_url, "store", "guard"], tmp_path)
    assert guarded.returncode == 0 and "restored: keep_tokens" in guarded.stdout
    verified = run(["--store", store_url, "store", "verify"], tmp_path)
    assert verified.returncode == 0 and "keep_tokens" not in verified.stdout
    guards = "events_refuse_change" if dialect == "postgresql" else "events_refuse_overwrite"
    assert f"trigger {guards}" in verified.stdout and "no other trigger or rule on events" in verified.stdout


@pytest.mark.parametrize("how", ["swallow", "skip all"])
def test_an_append_the_database_did_not_store_fails_loudly(store_url: str, engine: sa.Engine, how) -> None:
    """A trigger or rule added while a process holds the store open (the server, a worker): the
    revocation must fail, and the token stay as the store says, never reported revoked."""
    dialect = engine.dialect.name
    store = open_store(store_url)
    try:
        _, record = create_token(store, "ci", ["read"])
        store.append("s", [ev(1)])
        execute(engine, *(SWALLOW if how == "swallow" else SKIP_ALL)[dialect])
        with pytest.raises(StoreError):
            revoke_token(store, record.token_id)
        assert load_tokens(store)[record.token_id].active
        if how == "skip all":  # a batch too (PostgreSQL: COPY)
            with pytest.raises(StoreError, match="did not store the events of this append"):
                store.append("s", [ev(2), ev(3)])
        assert [e.type for e in store.read_all()] == ["TokenCreated", "Thing"]
    finally:
        store.close()


@pytest.mark.parametrize("change", [("NULL", "''"), ("''", "NULL")])
def test_an_idempotency_key_changed_between_null_and_empty_breaks_the_chain(store, tmp_path, change) -> None:
    was, now = change
    key_file = tmp_path / "cp.key"
    generate_key(key_file)
    key, file = load_key(key_file), tmp_path / "cp.jsonl"
    store.append("s", [ev(1, "k1"), ev(2, None if was == "NULL" else ""), ev(3, "k3")])
    take_checkpoint(store, file, key)
    _drop_guards(store)
    where = "IS NULL" if was == "NULL" else "= ''"
    store.raw_sql(f"UPDATE events SET idempotency_key = {now} WHERE idempotency_key {where}")
    _restore_guards(store)
    report = verify_chain(store, read_checkpoints(file, key))
    assert not report.ok and report.broken_position == 2 and "does not match its hash" in report.reason


BLOB = {
    "sqlite": "UPDATE events SET payload = CAST(payload AS BLOB) WHERE global_position = 2",
    "postgresql": "ALTER TABLE events ALTER COLUMN payload TYPE bytea USING convert_to(payload, 'UTF8')",
}


def test_a_blob_payload_is_a_clear_problem_not_a_traceback(store, store_url, tmp_path) -> None:
    store.append("s", [ev(1), ev(2), ev(3)])
    if store.dialect == "sqlite":
        _drop_guards(store)
    store.raw_sql(BLOB[store.dialect])
    if store.dialect == "sqlite":
        _restore_guards(store)
    at = 2 if store.dialect == "sqlite" else 1
    report = verify_chain(store)
    assert not report.ok and report.broken_position == at
    assert "payload holds bytes (a BLOB), not text" in report.reason
    verified = run(["--store", store_url, "store", "verify"], tmp_path)
    assert verified.returncode == 1 and "Traceback" not in verified.stderr + verified.stdout
    assert f"broken at global position {at}: its payload holds bytes (a BLOB)" in verified.stdout


# The guard each engine relies on most, dropped with the row that records the schema's revision.
DROP_GUARD = {
    "sqlite": ("events_refuse_overwrite", "DROP TRIGGER events_refuse_overwrite"),
    "postgresql": ("events_refuse_change", "DROP TRIGGER events_refuse_change ON events"),
}


def test_a_guard_dropped_with_the_version_row_fails_verify_and_is_not_recreated_by_upgrade(
    store_url: str, engine: sa.Engine, tmp_path: Path
) -> None:
    trigger, drop = DROP_GUARD[engine.dialect.name]
    store = open_store(store_url)
    store.append("s", [ev(1), ev(2)])
    store.close()
    assert run(["store", "keygen", "cp.key"], tmp_path).returncode == 0
    anchor = ["--checkpoints", "cp.jsonl", "--key-file", "cp.key"]
    assert (
        run(
            ["--store", store_url, "store", "checkpoint", "--file", "cp.jsonl", "--key-file", "cp.key"],
            tmp_path,
        ).returncode
        == 0
    )
    execute(engine, drop, "DELETE FROM alembic_version_store")

    verified = run(["--store", store_url, "store", "verify", *anchor], tmp_path)
    assert verified.returncode == 1, verified.stdout
    assert f"trigger {trigger} is missing" in verified.stdout
    assert "alembic_version_store holds no revision" in verified.stdout
    upgraded = run(["store", "upgrade", "--store", store_url, *anchor], tmp_path)
    assert upgraded.returncode == 1 and "refused" in upgraded.stdout
    assert f"found: trigger {trigger} is missing" in upgraded.stdout
    assert trigger not in _triggers(engine)  # not re-created, and the revision still unrecorded
    refused = run(["--store", store_url, "traces", "list"], tmp_path)
    assert refused.returncode == 2 and "has lost its schema revision" in refused.stderr

    restored = run(["--store", store_url, "store", "guard", *anchor], tmp_path)  # on purpose
    assert restored.returncode == 0 and f"restored: {trigger}" in restored.stdout
    upgraded = run(["store", "upgrade", "--store", store_url, *anchor], tmp_path)
    assert upgraded.returncode == 0 and "holds no revision" in upgraded.stdout
    assert "→ revision 0003" in upgraded.stdout
    assert run(["--store", store_url, "store", "verify", *anchor], tmp_path).returncode == 0


def _triggers(engine: sa.Engine) -> set[str]:
    catalogue = {
        "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger'",
        "postgresql": "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass('events')",
    }
    with engine.connect() as conn:
        return {r[0] for r in conn.exec_driver_sql(catalogue[engine.dialect.name])}


NULL_VERSION = {  # the version column is a NOT NULL primary key: the attacker remakes it first
    "sqlite": [
        "DROP TABLE alembic_version_store",
        "CREATE TABLE alembic_version_store (version_num VARCHAR(32))",
        "INSERT INTO alembic_version_store VALUES (NULL)",
    ],
    "postgresql": [
        "ALTER TABLE alembic_version_store DROP CONSTRAINT alembic_version_store_pkc",
        "ALTER TABLE alembic_version_store ALTER COLUMN version_num DROP NOT NULL",
        "UPDATE alembic_version_store SET version_num = NULL",
    ],
}


def test_a_null_version_row_is_read_alike_by_upgrade_and_every_other_command(
    store_url: str, engine: sa.Engine, tmp_path: Path
) -> None:
    execute(engine, *NULL_VERSION[engine.dialect.name])
    lost = "alembic_version_store holds a NULL revision"
    status = run(["store", "status", "--store", store_url], tmp_path)
    assert status.returncode == 1 and lost in status.stdout and "behind revision 0003" in status.stdout
    as_json = run(["store", "status", "--store", store_url, "--json"], tmp_path)
    first = json.loads(as_json.stdout)["schemas"][0]
    assert as_json.returncode == 1 and first["revision"] is None and lost in first["damage"]
    for command in (["traces", "list"], ["tokens", "list"]):
        refused = run(["--store", store_url, *command], tmp_path)
        assert refused.returncode == 2 and lost in refused.stderr and "Traceback" not in refused.stderr
    verified = run(["--store", store_url, "store", "verify"], tmp_path)
    assert verified.returncode == 1 and lost in verified.stdout
    upgraded = run(["store", "upgrade", "--store", store_url], tmp_path)
    assert upgraded.returncode == 0 and lost in upgraded.stdout and "→ revision 0003" in upgraded.stdout
    assert "nothing to do" not in upgraded.stdout.split("\n")[0]
    assert run(["--store", store_url, "traces", "list"], tmp_path).returncode == 0
    assert run(["--store", store_url, "store", "verify"], tmp_path).returncode == 0
    again = run(["store", "upgrade", "--store", store_url], tmp_path)
    assert again.returncode == 0 and "event store: at revision 0003, nothing to do" in again.stdout
