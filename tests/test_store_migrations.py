"""Schema migrations (issue 23, item 3): a database made by an earlier release is upgraded by
`auditor store upgrade` with every event and hash kept, on SQLite and PostgreSQL; an empty one is
created at head through the migrations; one behind or ahead of the code is refused at open.

The earlier releases' schemas are in tests/fixtures/store_schemas/: the DDL their code ran,
captured by running it on an empty database (SQLite: ``sqlite_master`` afterwards; PostgreSQL:
every statement executed). Their events are real ones (a trace ingested and reviewed), copied row
for row, hashes included: the chain's hash function has not changed since those releases.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from auditor.core.errors import StoreError
from auditor.core.store import open_store, resolve_url, verify_chain
from auditor.core.store.migrate import INDEX, STORE
from auditor.core.store.tables import metadata
from auditor.core.store.traces import TracesProjection, list_traces, traces_view
from auditor.surfaces.server.index import SearchProjection, meta, participant_rows, report_rows, trace_rows
from auditor.surfaces.server.search import SearchIndex, TraceQuery
from schemas.events import RecordedEvent
from tests.cli_helpers import run
from tests.conftest import REPO

SCHEMAS = Path(__file__).parent / "fixtures" / "store_schemas"
EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
COLUMNS = (
    "global_position, stream_id, stream_version, type, schema_version, payload, metadata, "
    "idempotency_key, prev_hash, hash, recorded_at"
)


@pytest.fixture(scope="module")
def donor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple]]:
    """The rows of a real store: a trace ingested and reviewed (a report filed)."""
    where = tmp_path_factory.mktemp("donor")
    assert run(["review", str(EXAMPLE)], where).returncode in (0, 1)  # 1: findings filed
    store = open_store(f"sqlite:///{where / 'auditor.db'}")
    try:
        rows = rows_of(store.engine)
    finally:
        store.close()
    assert {r[3] for r in rows} == {"TraceStarted", "StepRecorded", "ReportFiled"}
    yield rows


def rows_of(engine: sa.Engine) -> list[tuple]:
    with engine.connect() as conn:
        return [
            tuple(r) for r in conn.exec_driver_sql(f"SELECT {COLUMNS} FROM events ORDER BY global_position")
        ]


def earlier_release(url: str, release: str, rows: list[tuple]) -> sa.Engine:
    """A database as ``release`` left it: its schema, ``rows`` in its event table, and its traces
    view and search index caught up with them (by today's projection code, which writes only
    columns those releases had)."""
    engine = sa.create_engine(resolve_url(url))
    sql = (SCHEMAS / f"{release}_{engine.dialect.name}.sql").read_text()
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    recorded = [_recorded(r) for r in rows]
    with engine.begin() as conn:
        for statement in body.split(";\n\n"):
            if statement.strip():
                conn.exec_driver_sql(statement)
        marks = ", ".join(["%s" if engine.dialect.name == "postgresql" else "?"] * 11)
        conn.exec_driver_sql(f"INSERT INTO events ({COLUMNS}) VALUES ({marks})", rows)
        TracesProjection().apply(conn, [e for e in recorded if e.type in TracesProjection.event_types])
        _old_index_rows(conn, recorded)
        positions = [{"name": n, "position": len(rows)} for n in ("traces", SearchProjection.name)]
        conn.execute(sa.text("INSERT INTO projection_positions VALUES (:name, :position)"), positions)
    return engine


def _old_index_rows(conn: sa.Connection, recorded: list[RecordedEvent]) -> None:
    """The search index's rows as those releases wrote them: today's projection applied in a
    scratch database at head, copied with only the columns the old tables have."""
    scratch = sa.create_engine("sqlite://")
    meta.create_all(scratch)
    with scratch.begin() as s:
        SearchProjection().apply(s, [e for e in recorded if e.type in SearchProjection.event_types])
        for table in (trace_rows, participant_rows, report_rows):
            old = {c["name"] for c in sa.inspect(conn).get_columns(table.name)} & set(table.c.keys())
            rows = [{k: v for k, v in r.items() if k in old} for r in s.execute(sa.select(table)).mappings()]
            if rows:
                conn.execute(sa.table(table.name, *map(sa.column, sorted(old))).insert(), rows)
    scratch.dispose()


def _recorded(row: tuple) -> RecordedEvent:
    fields = dict(zip(COLUMNS.split(", "), row, strict=True))
    return RecordedEvent(**fields | {"payload": json.loads(row[5]), "metadata": json.loads(row[6])})


def tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


@pytest.mark.parametrize("release", ["0001", "pre_migrations"])
def test_an_earlier_release_is_upgraded_with_every_event_and_hash_kept(
    store_url: str, tmp_path: Path, donor: list[tuple], release: str
) -> None:
    engine = earlier_release(store_url, release, donor)
    try:
        with pytest.raises(StoreError, match=r"event store .* before migrations") as refused:
            open_store(store_url)
        assert "run 'auditor store upgrade'" in refused.value.one_line()

        status = run(["--store", store_url, "store", "status"], tmp_path)
        assert status.returncode == 1 and "event store: unversioned" in status.stdout
        verified = run(["--store", store_url, "store", "verify"], tmp_path)  # read-only on an old store
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert f"ok: {len(donor)} events" in verified.stdout and "auditor store upgrade" in verified.stdout
        assert not {"alembic_version_store", "alembic_version_index"} & tables(engine)

        upgraded = run(["store", "upgrade", "--store", store_url], tmp_path)
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        assert (
            "event store: unversioned (a release before migrations; taken as revision 0001) → revision 0003"
            in (upgraded.stdout)
        )
        assert "server index: unversioned" in upgraded.stdout and "→ revision 0003" in upgraded.stdout

        verified = run(["--store", store_url, "store", "verify"], tmp_path)
        assert verified.returncode == 0 and f"ok: {len(donor)} events, hash chain intact" in verified.stdout
        assert rows_of(engine) == donor  # every event, every hash
        again = run(["store", "upgrade", "--store", store_url], tmp_path)
        assert again.returncode == 0 and "event store: at revision 0003, nothing to do" in again.stdout

        store = open_store(store_url)
        try:
            _works_at_head(store, engine)
        finally:
            store.close()
        assert (
            run(
                ["--store", store_url, "ingest", str(EXAMPLE), "--trace-id", "after-upgrade"], tmp_path
            ).returncode
            == 0
        )
        assert run(["--store", store_url, "store", "verify"], tmp_path).returncode == 0
    finally:
        engine.dispose()


def _works_at_head(store, engine: sa.Engine) -> None:  # type: ignore[no-untyped-def]
    """The upgraded store's views and guards: the index answers its filters from the rows the old
    release wrote (through the indexes the upgrade added), an overwrite is refused."""
    assert [t.trace_id for t in list_traces(store)] == ["example-renewal-drift"]
    index = SearchIndex(store)
    query = TraceQuery(
        framework="HANDWRITTEN", participant="Deal_Desk", text="northwind discount", severity="low"
    )
    page = index.traces(query)
    assert [r["trace_id"] for r in page.rows] == ["example-renewal-drift"] and page.rows[0]["reports"] == 1
    # the upgrade emptied the index and it was rebuilt: the old report's risk and outcome are there
    assert page.rows[0]["risk_score"] > 0 and page.rows[0]["outcome"] == "failed"
    catalogue = "sqlite_master WHERE type = 'index'" if store.dialect == "sqlite" else "pg_indexes WHERE true"
    column = "name" if store.dialect == "sqlite" else "indexname"
    with engine.connect() as conn:  # the inspector leaves expression indexes out on SQLite
        names = {r[0] for r in conn.exec_driver_sql(f"SELECT {column} FROM {catalogue}")}
    assert {"ix_server_traces_severity", "ix_server_participants_name_trace"} <= names
    assert not {"ix_server_traces_framework", "ix_server_participants_name"} & names  # replaced
    overwrite = {  # the insert guard of revision 0002; PostgreSQL's row trigger of 0001
        "sqlite": "REPLACE INTO events SELECT * FROM events WHERE global_position = 1",
        "postgresql": "INSERT INTO events SELECT * FROM events WHERE global_position = 1 "
        "ON CONFLICT (global_position) DO UPDATE SET type = 'Edited'",
    }
    with pytest.raises(sa.exc.DBAPIError, match="append-only"):
        store.raw_sql(overwrite[store.dialect])
    assert verify_chain(store).ok


def test_an_empty_database_is_created_at_head_by_the_migrations(store_url: str, tmp_path: Path) -> None:
    """Tables, indexes and the search index's column as the code declares them (the migrations and
    the Table definitions are held together here), with both version tables at head."""
    assert STORE.script.get_current_head() == STORE.head and INDEX.script.get_current_head() == INDEX.head
    status = run(["--store", store_url, "store", "status"], tmp_path)  # the first open creates the store
    assert status.returncode == 0 and status.stdout.split("\n")[:2] == [
        "event store: revision 0003",
        "server index: not created",
    ]
    upgraded = run(["--store", store_url, "store", "upgrade", "--index"], tmp_path)  # as the server would
    assert upgraded.returncode == 0 and "server index: created at revision 0003" in upgraded.stdout
    store = open_store(store_url)
    try:
        declared = sa.MetaData()
        for table in [*metadata.tables.values(), traces_view, *meta.tables.values()]:
            table.to_metadata(declared)
        postgres_only = {"words_tsv", "ix_server_traces_tsv", "ix_server_traces_source_trgm"}
        version_tables = {STORE.version_table, INDEX.version_table}

        def compared(obj, name, kind, reflected, other) -> bool:  # type: ignore[no-untyped-def]
            return name not in postgres_only | version_tables

        with store.engine.connect() as conn, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLite cannot reflect expression indexes: skipped
            context = MigrationContext.configure(conn, opts={"include_object": compared})
            assert compare_metadata(context, declared) == []
            versions = [
                conn.execute(sa.text(f"SELECT version_num FROM {t}")).scalar() for t in sorted(version_tables)
            ]
        assert versions == [INDEX.head, STORE.head] and store.guard_problems == []
    finally:
        store.close()


def test_a_schema_behind_or_ahead_of_the_code_is_refused_at_open(store_url: str, tmp_path: Path) -> None:
    open_store(store_url).close()
    engine = sa.create_engine(resolve_url(store_url))
    try:
        with engine.begin() as conn:  # a search index made by a release before migrations
            conn.exec_driver_sql("CREATE TABLE server_traces (trace_id VARCHAR(512) PRIMARY KEY)")
        with pytest.raises(StoreError, match=r"server index .* behind this auditor's revision 0003"):
            open_store(store_url)
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE server_traces")
            conn.exec_driver_sql(f"UPDATE {STORE.version_table} SET version_num = '0042'")
        for attempt in (["traces", "list"], ["store", "verify"], ["store", "upgrade"]):
            refused = run(["--store", store_url, *attempt], tmp_path)
            assert refused.returncode == 2 and "Traceback" not in refused.stderr
            assert "schema revision 0042, which this auditor does not know" in refused.stderr
            assert "a newer auditor wrote it" in refused.stderr
    finally:
        engine.dispose()


def test_the_upgrade_refuses_a_broken_chain_and_changes_nothing(tmp_path: Path, donor: list[tuple]) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    edited = [
        *donor[:3],
        (*donor[3][:5], donor[3][5].replace("Northwind", "Southwind"), *donor[3][6:]),
        *donor[4:],
    ]
    engine = earlier_release(url, "0001", edited)
    try:
        refused = run(["--store", url, "store", "upgrade"], tmp_path)
        assert refused.returncode == 1 and "broken at global position 4" in refused.stdout
        assert "upgraded only over an intact chain" in refused.stdout
        assert not {"alembic_version_store", "alembic_version_index"} & tables(engine)
        with engine.connect() as conn:
            triggers = {
                r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            }
        assert triggers == {"events_refuse_update", "events_refuse_delete"}  # no guard added over it
    finally:
        engine.dispose()


def test_a_guard_lost_before_the_upgrade_is_reported_not_recreated(
    tmp_path: Path, donor: list[tuple]
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = earlier_release(url, "0001", donor)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TRIGGER events_refuse_delete")
        lost = run(["--store", url, "store", "verify"], tmp_path)
        assert lost.returncode == 1 and "trigger events_refuse_delete is missing" in lost.stdout
        early = run(["--store", url, "store", "guard"], tmp_path)
        assert early.returncode == 1 and "run 'auditor store upgrade' first" in early.stdout
        upgraded = run(["--store", url, "store", "upgrade"], tmp_path)
        assert upgraded.returncode == 1 and "→ revision 0003" in upgraded.stdout
        assert "guard lost" in upgraded.stdout and "events_refuse_delete is missing" in upgraded.stdout
        assert run(["--store", url, "traces", "list"], tmp_path).returncode == 2
        restored = run(["--store", url, "store", "guard"], tmp_path)
        assert restored.returncode == 0 and "restored: events_refuse_delete" in restored.stdout
        assert run(["--store", url, "store", "verify"], tmp_path).returncode == 0
    finally:
        engine.dispose()
