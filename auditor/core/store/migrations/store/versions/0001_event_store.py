"""The event store as every release before migrations created it at its first open: the event
table, the projection positions, and the triggers that refuse UPDATE and DELETE on events (on
PostgreSQL TRUNCATE too, through one function that raises).

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_REFUSED = "events are append-only: UPDATE and DELETE are refused"
_SQLITE = [
    f"""CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, '{_REFUSED}'); END""",
    f"""CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, '{_REFUSED}'); END""",
]
_POSTGRESQL = [
    f"""CREATE FUNCTION auditor_events_refuse_change() RETURNS trigger AS $$
        BEGIN RAISE EXCEPTION '{_REFUSED}'; END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER events_refuse_change BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION auditor_events_refuse_change()""",
    """CREATE TRIGGER events_refuse_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION auditor_events_refuse_change()""",
]


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "global_position",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),  # SQLite: the rowid itself
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("stream_id", sa.String(512), nullable=False),
        sa.Column("stream_version", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(200), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("idempotency_key", sa.String(512), nullable=True),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("recorded_at", sa.String(40), nullable=False),
    )
    op.create_index("ix_events_stream", "events", ["stream_id", "stream_version"], unique=True)
    op.create_index("ix_events_idempotency", "events", ["idempotency_key"], unique=True)
    op.create_index("ix_events_type", "events", ["type"])
    op.create_table(
        "projection_positions",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("position", sa.BigInteger(), nullable=False),
    )
    for statement in _POSTGRESQL if op.get_bind().dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)
