"""What `auditor serve` added to its index at start until migrations (ALTER … IF NOT EXISTS):

- PostgreSQL: the words as a stored ``tsvector`` column under a GIN index, replacing the
  expression index of 0001 (computed in the query, every row's words were parsed again whenever
  the planner walked rows in order: seconds for a common word at 10,000 traces);
- an index for each filter that a list counts through (case-folded framework, severity, findings,
  participants by name), replacing the plain framework and participant indexes of 0001 (left in
  place, PostgreSQL's planner still picked the plain framework index and tested lower() per row);
- PostgreSQL: trigrams for substring search on the source, where this role may enable pg_trgm;
  otherwise that filter scans (see docs/store.md to add the index later).

Every statement also applies over a database where those releases had already added it.

Revision ID: 0002
Revises: 0001
"""

import logging

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.exc import DBAPIError

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

log = logging.getLogger("auditor.core.store")


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    if postgresql:
        op.add_column(
            "server_traces",
            sa.Column("words_tsv", TSVECTOR(), sa.Computed("to_tsvector('simple', words)", persisted=True)),
            if_not_exists=True,
        )
        op.drop_index("ix_server_traces_words", "server_traces", if_exists=True)
        op.create_index(
            "ix_server_traces_tsv", "server_traces", ["words_tsv"], postgresql_using="gin", if_not_exists=True
        )
    filters = {
        "ix_server_traces_framework_lower": ("server_traces", [sa.text("lower(framework)"), "position"]),
        "ix_server_traces_severity": ("server_traces", ["max_severity", "position"]),
        "ix_server_traces_findings": ("server_traces", ["findings", "position"]),
        "ix_server_participants_name_trace": ("server_trace_participants", ["name", "trace_id"]),
    }
    for name, (table, columns) in filters.items():
        op.create_index(name, table, columns, if_not_exists=True)
    op.drop_index("ix_server_traces_framework", "server_traces", if_exists=True)
    op.drop_index("ix_server_participants_name", "server_trace_participants", if_exists=True)
    if postgresql:
        _source_trigrams()


def _source_trigrams() -> None:
    """The trigram index where pg_trgm is there or this role may enable it; a savepoint keeps the
    migration going without it."""
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
            bind.execute(
                sa.text(
                    "CREATE INDEX IF NOT EXISTS ix_server_traces_source_trgm ON server_traces "
                    "USING gin (lower(source) gin_trgm_ops)"
                )
            )
    except DBAPIError as exc:
        log.warning("source search scans the index table (pg_trgm unavailable: %s)", exc.orig)
