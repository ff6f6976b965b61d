"""The server's search index as `auditor serve` first created it (one row per trace, one per
participant, one per report), with its first indexes; on PostgreSQL a GIN full-text index over
the trace's words, computed in the index.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_traces",
        sa.Column("trace_id", sa.String(512), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("source", sa.Text()),
        sa.Column("framework", sa.String(200)),
        sa.Column("task", sa.Text()),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("participants", sa.Text(), nullable=False),
        sa.Column("time", sa.String(40), nullable=False),
        sa.Column("time_basis", sa.String(10), nullable=False),
        sa.Column("report_id", sa.String(200)),
        sa.Column("reports", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(40)),
        sa.Column("findings", sa.Integer(), nullable=False),
        sa.Column("max_severity", sa.Integer(), nullable=False),
        sa.Column("words", sa.Text(), nullable=False),
    )
    op.create_index("ix_server_traces_position", "server_traces", ["position"])
    op.create_index("ix_server_traces_time", "server_traces", ["time"])
    op.create_index("ix_server_traces_framework", "server_traces", ["framework"])
    op.create_table(
        "server_trace_participants",
        sa.Column("trace_id", sa.String(512), primary_key=True),
        sa.Column("name", sa.String(512), primary_key=True),
    )
    op.create_index("ix_server_participants_name", "server_trace_participants", ["name"])
    op.create_table(
        "server_reports",
        sa.Column("report_id", sa.String(200), primary_key=True),
        sa.Column("trace_id", sa.String(512), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("engine", sa.String(200)),
        sa.Column("graph_mode", sa.String(20)),
        sa.Column("decision", sa.String(40)),
        sa.Column("findings", sa.Integer(), nullable=False),
        sa.Column("max_severity", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.String(40)),
        sa.Column("valid", sa.Integer()),
    )
    op.create_index("ix_server_reports_trace", "server_reports", ["trace_id", "position"])
    op.create_index("ix_server_reports_position", "server_reports", ["position"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE INDEX ix_server_traces_words ON server_traces USING gin (to_tsvector('simple', words))"
        )
