"""The table of `auditor traces list` (a projection), which earlier releases created at its first
use: created here with the rest of the store, unless such a use already made it.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "view_traces",
        sa.Column("trace_id", sa.String(512), primary_key=True),
        sa.Column("source", sa.Text()),
        sa.Column("framework", sa.String(200)),
        sa.Column("task", sa.Text()),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("participants", sa.Text(), nullable=False),
        sa.Column("first_position", sa.Integer(), nullable=False),
        if_not_exists=True,
    )
